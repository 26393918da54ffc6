#pragma once
// The form of a record's `config` (the option tables' record, bench/option_table.h), stated beside it as `config_version` by
// the records that carry one (run, train). The result schema describes a config of this version by the tables
// ($defs.config_<subcommand>, bench/config_schema.h); a config of an older version, or of a record that states none (written
// before records stated it), stays valid, undescribed, and the readers read none of it (reports/common/option_facts.py).
// Bump it when a recorded option's suite key is renamed or removed or its value changes form, so that older records are
// told by what they state rather than by what they hold.
namespace ts {

inline constexpr int kConfigVersion = 1;

}  // namespace ts
