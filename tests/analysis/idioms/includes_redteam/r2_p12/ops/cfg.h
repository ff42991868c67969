#pragma once
#define BIAS 1.0f
