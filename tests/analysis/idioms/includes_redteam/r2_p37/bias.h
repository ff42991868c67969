#pragma once
// ./bias.h: the application's own bias header (a different value)
#define OPS_BIAS 42.0f
