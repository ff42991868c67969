// inc/ops_tuned.h -- written by the autotuner
#pragma once
#define OPS_GAIN 1.75f
#define OPS_TUNED 1
