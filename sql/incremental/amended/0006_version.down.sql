-- Amended 0006_version down (replaces sql/incremental/0006_version.down.sql from revision 0049 on;
-- the released file stays as it ran). From 0049 kgrag.version() is defined in
-- sql/idempotent/006_version.sql and exists at head only: the installer drops it with the rest of
-- that layer before any down file runs, so it may be gone already here.
DROP FUNCTION IF EXISTS kgrag.version();
