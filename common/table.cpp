// table.cpp: the printing of a Table.
#include "table.h"

#include "format.h"

#include <algorithm>
#include <stdexcept>

namespace workbook {

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

const Column* Table::find(const std::string& key) const {
  for (const Column& c : columns_) {
    if (c.key == key) return &c;
  }
  return nullptr;
}

Table::Row& Table::Row::set(const std::string& key, nlohmann::json value) {
  const Column* column = table_->find(key);
  if (column == nullptr) throw std::logic_error("Table: no column '" + key + "'");
  const bool is_timing = value.is_object() && value.size() == 4 && value.contains("median") &&
                         value.contains("min") && value.contains("max") && value.contains("runs");
  if ((column->style == Column::Style::kTiming) != is_timing) {
    throw std::logic_error("Table: column '" + key + "' takes " +
                           (is_timing ? "a number or text, not a timing" : "a timing (workbook::timing)"));
  }
  cells_[key] = std::move(value);
  return *this;
}

Table::Row& Table::add_row() {
  rows_.push_back(Row(this));
  return rows_.back();
}

nlohmann::json timing(const Stats& stats) {
  return {{"median", stats.median}, {"min", stats.min}, {"max", stats.max}, {"runs", stats.count}};
}

struct Table::Shown {
  const Column* column;
  std::string heading;
  std::string field;  // empty: the whole cell; else one field of a kTiming cell
};

std::vector<Table::Shown> Table::shown_columns() const {
  std::vector<Shown> shown;
  for (const Column& c : columns_) {
    if (c.heading.empty()) continue;
    if (c.style != Column::Style::kTiming) {
      shown.push_back({&c, c.heading, ""});
      continue;
    }
    shown.push_back({&c, c.heading, "median"});
    shown.push_back({&c, "min", "min"});
    shown.push_back({&c, "max", "max"});
    shown.push_back({&c, "runs", "runs"});
  }
  return shown;
}

std::string Table::cell_text(const Row& row, const Column& column) const {
  return shown_text(row, {&column, column.heading, column.style == Column::Style::kTiming ? "median" : ""});
}

std::string Table::shown_text(const Row& row, const Shown& shown) const {
  const Column& column = *shown.column;
  if (!row.cells_.contains(column.key)) return "";
  const nlohmann::json& cell = row.cells_[column.key];
  if (!shown.field.empty() && !(cell.is_object() && cell.contains(shown.field))) return "";
  const nlohmann::json& v = shown.field.empty() ? cell : cell[shown.field];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (column.style == Column::Style::kBytes && v.is_number()) return format_size(v.get<double>());
  if (v.is_number_float() && column.digits >= 0) {
    const char* pattern = column.style == Column::Style::kScientific ? "%.*e" : "%.*f";
    return format(pattern, column.digits, v.get<double>());
  }
  return v.dump();
}

void Table::print(std::ostream& out, const std::string& indent) const {
  const std::vector<Shown> shown = shown_columns();
  std::vector<std::size_t> width;
  std::vector<bool> text;  // a column of text is left-aligned
  for (const Shown& c : shown) {
    std::size_t w = c.heading.size();
    bool all_text = true;
    for (const Row& r : rows_) {
      w = std::max(w, shown_text(r, c).size());
      if (r.cells_.contains(c.column->key) && !r.cells_[c.column->key].is_string()) all_text = false;
    }
    width.push_back(w);
    text.push_back(all_text);
  }
  // `last` columns are aligned; a row whose cells stop early (a skipped run, say) and whose
  // last column is set prints that cell right after its own, not after a run of blanks.
  auto line = [&](auto&& cell_of, std::size_t aligned) {
    std::string s = indent;
    for (std::size_t i = 0; i < shown.size(); ++i) {
      if (i >= aligned && i + 1 < shown.size()) continue;
      const std::string cell = cell_of(i);
      const std::string pad(width[i] - std::min(width[i], cell.size()), ' ');
      s += i == 0 ? "" : "  ";
      s += text[i] || i >= aligned ? cell + pad : pad + cell;
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << "\n";
  };
  line([&](std::size_t i) { return shown[i].heading; }, shown.size());
  for (const Row& r : rows_) {
    auto has = [&](std::size_t i) { return r.cells_.contains(shown[i].column->key); };
    std::size_t set = 0;  // the cells before the first unset one
    while (set < shown.size() && has(set)) ++set;
    bool rest_unset = set + 1 < shown.size() && has(shown.size() - 1);
    for (std::size_t i = set; rest_unset && i + 1 < shown.size(); ++i) rest_unset = !has(i);
    line([&](std::size_t i) { return shown_text(r, shown[i]); }, rest_unset ? set : shown.size());
  }
}

void Table::print_turned(std::ostream& out, const std::string& indent) const {
  const std::vector<Shown> shown = shown_columns();
  std::size_t heading_width = 0;
  std::vector<std::size_t> row_width(rows_.size(), 0);  // each row is a column of text here
  for (const Shown& c : shown) {
    heading_width = std::max(heading_width, c.heading.size());
    for (std::size_t i = 0; i < rows_.size(); ++i) row_width[i] = std::max(row_width[i], shown_text(rows_[i], c).size());
  }
  for (const Shown& c : shown) {
    const bool any_set =
        std::any_of(rows_.begin(), rows_.end(), [&](const Row& r) { return r.cells_.contains(c.column->key); });
    if (!any_set) continue;  // a property no row has is left out
    std::string s = indent + c.heading + std::string(heading_width - c.heading.size(), ' ');
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      const std::string cell = shown_text(rows_[i], c);
      s += "  " + cell + std::string(row_width[i] - cell.size(), ' ');
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << "\n";
  }
}

nlohmann::json Table::json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const Row& r : rows_) rows.push_back(r.cells_);
  return rows;
}

}  // namespace workbook
