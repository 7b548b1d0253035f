// Entry point of the shared-library plugin (bin/plugins/cubeforge_ai.so) that the editor loads at start.
#include "ai_plugin.h"

CUBEFORGE_PLUGIN(cubeforge::ai::AiPlugin, "ai")
