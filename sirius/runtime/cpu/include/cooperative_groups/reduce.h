// Sirius CPU backend: cooperative_groups::reduce lives in cooperative_groups.h.
#pragma once
#pragma GCC system_header
#include "../cooperative_groups.h"
