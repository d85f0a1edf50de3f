"""A worker module whose import fails, as a plugin with a missing dependency would."""

import a_module_that_is_not_installed  # noqa: F401
