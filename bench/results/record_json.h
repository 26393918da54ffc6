#pragma once
// The two shapes every record encoder writes: a field that is null when the measurement had nothing to
// say (the schema lists it, so it is always there), and a field that is absent when unset (a label, the
// suite step).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"

namespace ts {

template <class T>
nlohmann::json orNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// A closed choice by its name (nlohmann alone would write the enum's number).
template <NamedEnum E>
nlohmann::json orNull(const std::optional<E>& v) {
  return v ? nlohmann::json(std::string(nameOf(*v))) : nlohmann::json(nullptr);
}

inline void putUnlessEmpty(nlohmann::json& j, const char* key, const std::string& value) {
  if (!value.empty()) j[key] = value;
}

}  // namespace ts
