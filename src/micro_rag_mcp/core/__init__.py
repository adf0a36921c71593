"""Values, errors, settings and small file utilities every part uses."""
