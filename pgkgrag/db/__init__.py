"""The database: the private server, connections and roles, the installer of sql/ and the schema revision."""
