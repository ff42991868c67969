#pragma once
// present only in the ops folder: enables the fused-multiply path
#define OPS_FAST_TABLES 1
