-- Undo 0001_base: remove every kgrag object. The pgvector extension stays (others may use it).
DROP SCHEMA kgrag CASCADE;
