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
  if (table_->find(key) == nullptr) throw std::logic_error("Table: no column '" + key + "'");
  cells_[key] = std::move(value);
  return *this;
}

Table::Row& Table::add_row() {
  rows_.push_back(Row(this));
  return rows_.back();
}

std::string Table::cell_text(const Row& row, const Column& column) const {
  if (!row.cells_.contains(column.key)) return "";
  const nlohmann::json& v = row.cells_[column.key];
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
  std::vector<const Column*> shown;
  for (const Column& c : columns_) {
    if (!c.heading.empty()) shown.push_back(&c);
  }
  std::vector<std::size_t> width;
  std::vector<bool> text;  // a column of text is left-aligned
  for (const Column* c : shown) {
    std::size_t w = c->heading.size();
    bool all_text = true;
    for (const Row& r : rows_) {
      w = std::max(w, cell_text(r, *c).size());
      if (r.cells_.contains(c->key) && !r.cells_[c->key].is_string()) all_text = false;
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
  line([&](std::size_t i) { return shown[i]->heading; }, shown.size());
  for (const Row& r : rows_) {
    std::size_t set = 0;  // the cells before the first unset one
    while (set < shown.size() && r.cells_.contains(shown[set]->key)) ++set;
    bool rest_unset = set + 1 < shown.size() && r.cells_.contains(shown.back()->key);
    for (std::size_t i = set; rest_unset && i + 1 < shown.size(); ++i) rest_unset = !r.cells_.contains(shown[i]->key);
    line([&](std::size_t i) { return cell_text(r, *shown[i]); }, rest_unset ? set : shown.size());
  }
}

void Table::print_turned(std::ostream& out, const std::string& indent) const {
  std::size_t heading_width = 0;
  std::vector<std::size_t> row_width(rows_.size(), 0);  // each row is a column of text here
  for (const Column& c : columns_) {
    if (c.heading.empty()) continue;
    heading_width = std::max(heading_width, c.heading.size());
    for (std::size_t i = 0; i < rows_.size(); ++i) row_width[i] = std::max(row_width[i], cell_text(rows_[i], c).size());
  }
  for (const Column& c : columns_) {
    const bool any_set = std::any_of(rows_.begin(), rows_.end(), [&](const Row& r) { return r.cells_.contains(c.key); });
    if (c.heading.empty() || !any_set) continue;  // a property no row has is left out
    std::string s = indent + c.heading + std::string(heading_width - c.heading.size(), ' ');
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      const std::string cell = cell_text(rows_[i], c);
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
