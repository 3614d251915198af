"""The bundled offline demo: an example project and a recorded session that fixes it."""
