// table.h: a table of results declared once, printed as aligned text and serialized as JSON rows
// from the same cells, so the report and the --json output cannot disagree (nccl-tests' one table).
//
//   workbook::Table t({{"variant", "variant"}, {"ms", "ms", 3}, {"gbps", "GB/s", 0}, {"repeats", ""}});
//   t.add_row().set("variant", "4 last_block").set("ms", 1.527).set("gbps", 4120.0).set("repeats", 10);
//   t.print(report.out(), "  ");            // the headings, then one line a row, columns aligned
//   report.json()["variants"] = t.json();  // [{"variant": "4 last_block", "ms": 1.527, ...}]
//
// A column with an empty heading is JSON only; a cell left unset prints blank and is left out
// of that row's JSON. A kTiming column holds a measured time as timing(stats) makes it,
// {"median", "min", "max", "runs"}, and prints as four columns: its heading over the median, then
// "min", "max" and "runs":
//
//   workbook::Table t({{"variant", "variant"}, {"time_ms", "ms", 3, workbook::Column::Style::kTiming}});
//   t.add_row().set("variant", "4 last_block").set("time_ms", workbook::timing(stats));
//   //   variant          ms    min    max  runs
//   //   4 last_block  1.527  1.519  1.602    10
// Numbers print with the column's digits after the point (fixed, or
// scientific), byte counts in binary units (kBytes: "79.19 GiB"); the JSON keeps them unrounded.
// A table of few rows and many columns (a device's properties) prints turned: print_turned
// writes one line per column, its heading and then each row's cell.
#pragma once

#include "stats.h"

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace workbook {

// Every measured time in every JSON the workbook writes has this one shape:
// {"median": ..., "min": ..., "max": ..., "runs": N}, in the unit its key ends with (_ms, _us).
nlohmann::json timing(const Stats& stats);

struct Column {
  enum class Style { kFixed, kScientific, kBytes, kTiming };
  std::string key;      // the JSON name
  std::string heading;  // the printed heading; empty: JSON only
  int digits = -1;      // digits after the point for numbers; -1: integers and text as they are
  Style style = Style::kFixed;
};

class Table {
 public:
  class Row {
   public:
    Row& set(const std::string& key, nlohmann::json value);  // throws if the table has no such column
    const nlohmann::json& cells() const { return cells_; }

   private:
    friend class Table;
    explicit Row(const Table* table) : table_(table) {}
    const Table* table_;
    nlohmann::json cells_ = nlohmann::json::object();
  };

  explicit Table(std::vector<Column> columns);
  Table(const Table&) = delete;  // rows point back at their table
  Table& operator=(const Table&) = delete;

  Row& add_row();  // valid until the next add_row
  std::vector<Row>& rows() { return rows_; }
  const std::vector<Row>& rows() const { return rows_; }

  // Right-aligned columns (text left-aligned), two spaces apart, each line after `indent`.
  void print(std::ostream& out, const std::string& indent = "  ") const;
  // One line per shown column that some row sets: its heading, left-aligned, then each row's
  // cell, two spaces apart.
  void print_turned(std::ostream& out, const std::string& indent = "  ") const;
  nlohmann::json json() const;  // an array of row objects
  std::string cell_text(const Row& row, const Column& column) const;

 private:
  struct Shown;  // one printed column: a Column, or one field of a kTiming column
  std::vector<Shown> shown_columns() const;
  std::string shown_text(const Row& row, const Shown& shown) const;
  const Column* find(const std::string& key) const;
  std::vector<Column> columns_;
  std::vector<Row> rows_;
};

}  // namespace workbook
