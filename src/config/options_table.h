// The one table of recur's options (see option.h). Adding a knob means adding one entry here.
#pragma once

#include <span>

#include "config/option.h"

namespace recur::config {

std::span<const OptionSpec> all_options();
const OptionSpec* find_option(std::string_view name);

}  // namespace recur::config
