-- Undo 0006_version.
DROP FUNCTION kgrag.version();
