"""Model providers (implement kernel.ports.ProviderClient)."""
