// compat/legacy_api.h -- old API names, kept for the v1 tools
#pragma once
namespace legacy {
#include "../layers.cuh"   // already included by every user (#pragma once makes this empty)
inline int api_version() { return 1; }
}
