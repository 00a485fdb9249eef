"""`pgkgrag serve`: the HTTP service."""
