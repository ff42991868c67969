// Sirius CPU backend: part of the CUDA surface in sirius_cpu.h.
#pragma once
#pragma GCC system_header
#include "sirius_cpu.h"
