"""HTTP plumbing every area shares: middleware, errors, parameters, languages."""
