// sources.hpp - sources that become a chain of commits in the store: a
// Debian source package with its patches, consecutive PyPI releases.
#pragma once
#include <string>

namespace swec {

/// A commit message from a Debian patch's DEP-3 header (or a git
/// format-patch's): the Description's (Subject's) first line, its long
/// description, the other fields, and the trailers Swe-Crafter-Source:
/// debian-patch and Swe-Crafter-Patch: NAME.
std::string dep3_message(const std::string& patch, const std::string& name);

/// Builds the git repository 'repo' from a Debian source package (a name,
/// downloaded through a private apt configuration under STORE/apt, or a
/// local .dsc): the upstream tree with debian/ as the first commit, then, for
/// format 3.0 (quilt), each patch of debian/patches/series as a commit (the
/// chain stops at one that does not apply). Returns "SOURCE VERSION".
std::string build_debian_src(const std::string& what, const std::string& store, const std::string& repo);

/// Builds 'repo' from 'versions' consecutive final releases of a PyPI project
/// ("NAME" or "NAME==VERSION", the last of the chain), read from the JSON API
/// at 'index' (https://pypi.org/pypi, a mirror, or a file:// folder): a commit
/// per release dated at its upload, its changelog's new lines as message.
/// Returns "NAME VERSION".
std::string build_pypi(const std::string& what, int versions, const std::string& index, const std::string& repo,
                       const std::string& scratch);

}  // namespace swec
