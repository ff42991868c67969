#pragma once
// ops/bias.h: the bias the ops library uses in its "tuned" build
#define OPS_BIAS 0.75f
