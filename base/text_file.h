#pragma once
// Reading the small text files the kernel exposes (/proc, /sys): a missing or unreadable file reads as
// empty text, since an absent figure is not an error for an inventory or a sampler.
#include <string>

namespace ts {

std::string readTextFile(const std::string& path);   // the whole file
std::string readFirstLine(const std::string& path);  // without its newline

}  // namespace ts
