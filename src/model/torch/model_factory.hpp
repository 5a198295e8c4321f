#pragma once
// Kept for the callers that still include it; the models are in model/model_registry.hpp.
#include "model/model_registry.hpp"
