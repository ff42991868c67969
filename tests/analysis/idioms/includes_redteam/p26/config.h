// config.h -- developer defaults, used when no -I cfg is given
#pragma once
#define OPS_SCALE 1.0f
#define OPS_OFFSET 0.0f
#define CONFIG_NAME "local-defaults"
