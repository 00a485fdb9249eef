-- 0049_version_at_head: kgrag.version() is defined in sql/idempotent/006_version.sql, like every
-- other function, and exists at head only; until now the installer re-created it at the end of
-- every run with the revision reached as its result (revision 0006 created it).
--
-- The revision itself changes no table. It is there so that a driver released before it refuses
-- this database (an unknown revision) instead of running its own installer over it: that one
-- would drop kgrag.version() with the layer it did not write. To go back to such a driver,
-- `pgkgrag db downgrade 0048` with this one first.
DROP FUNCTION IF EXISTS kgrag.version();
