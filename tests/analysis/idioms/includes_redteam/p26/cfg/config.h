// cfg/config.h -- the build configuration selected with -I cfg
#pragma once
#define OPS_SCALE 3.0f
#define OPS_OFFSET -0.5f
#define CONFIG_NAME "cfg/release"
