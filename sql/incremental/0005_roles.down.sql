-- Undo 0005_roles: take the privileges back. The roles stay (they belong to the cluster and other
-- databases may use them); DROP ROLE kgrag_reader, kgrag_writer, kgrag_probe removes them once unused.
REVOKE ALL ON ALL TABLES IN SCHEMA kgrag FROM kgrag_reader, kgrag_writer;
REVOKE USAGE ON SCHEMA kgrag FROM kgrag_reader, kgrag_writer;
DROP POLICY probe_read ON kgrag.chunk;
DROP POLICY probe_read ON kgrag.alias;
REVOKE ALL ON ALL TABLES IN SCHEMA kgrag FROM kgrag_probe;
REVOKE USAGE ON SCHEMA kgrag FROM kgrag_probe;
