// command.hpp - a user's program as a filter: the request goes to its
// standard input, its standard output comes back (--judge-cmd, --cost cmd:).
#pragma once
#include <string>
#include <string_view>

namespace nk {

/// Runs 'command' through /bin/sh with 'input' on its standard input (a
/// temporary file in $TMPDIR, default /tmp, removed afterwards) and returns
/// its standard output. 'option' names the option in messages ("--judge-cmd").
/// A command that cannot start or exits non-zero is exit 1 naming it, its
/// status and 'what' (the request, e.g. "on latent 3").
std::string run_command(const std::string& command, std::string_view input, const std::string& option,
                        const std::string& what);

}  // namespace nk
