-- 0022_graph_chunks_per_entity down.

DELETE FROM kgrag.settings WHERE tenant_id = '*' AND key = 'graph_chunks_per_entity';
