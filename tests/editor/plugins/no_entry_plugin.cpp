// Broken test plugin: a shared library without the cubeforge_plugin_entry symbol.
extern "C" __attribute__((visibility("default"))) int some_other_symbol() { return 42; }
