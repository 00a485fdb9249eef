-- 0049_version_at_head: kgrag.version() is defined in sql/idempotent/006_version.sql, like every
-- other function, and exists at head, and below 0049 for the drivers of those revisions; until
-- now the installer re-created it at the end of every run with the revision reached as its
-- result, from a definition of its own (revision 0006 created it).
--
-- The revision itself changes no table. It is there so that a driver released before it refuses
-- this database (an unknown revision) instead of running its own installer over it: that one
-- would drop kgrag.version() with the layer it did not write. To go back to such a driver,
-- `pgkgrag db downgrade 0048` with this one first.
DROP FUNCTION IF EXISTS kgrag.version();
