#pragma once
// Line diff of two texts for side-by-side display (candidate answers, prompt templates against the
// shipped set). Myers' O(ND) algorithm on lines, after the common prefix and suffix are cut off;
// a pair of texts that differ in more than Options::maxEditDistance lines is not searched further
// (memory grows with D²): its middle is shown as one replaced block and `exact` is false.
//
// The result is a list of rows: equal lines, deleted lines (left only), inserted lines (right
// only) and changed pairs. Within a hunk (a run of deletions and insertions) a deleted line pairs
// with an inserted one when they are alike (character bigrams, Dice coefficient at least 0.5),
// in order, choosing the pairs with the highest total likeness; the rest stay deleted or inserted,
// so a rewritten line is not shown as an edit of its neighbour. Changed pairs carry the character
// ranges that differ on each side, from a diff of their tokens (identifiers, numbers, runs of
// spaces, single punctuation), which reads better on code than a character diff.

#include <QString>
#include <QStringList>
#include <QVector>

namespace kwb::textdiff {

enum class RowKind {
    Equal,    ///< the same line on both sides
    Changed,  ///< a deleted line paired with an inserted one
    Deleted,  ///< left only; the right side shows a filler
    Inserted, ///< right only; the left side shows a filler
};

/// Characters [start, start + length) of a line.
struct Range
{
    int start = 0;
    int length = 0;

    friend bool operator==(const Range& a, const Range& b) { return a.start == b.start && a.length == b.length; }
};

struct Row
{
    RowKind kind = RowKind::Equal;
    int leftLine = -1;           ///< 0-based line on the left, -1 for an inserted row
    int rightLine = -1;          ///< 0-based line on the right, -1 for a deleted row
    QVector<Range> leftChanges;  ///< Changed rows: what differs in the left line
    QVector<Range> rightChanges; ///< Changed rows: what differs in the right line
};

/// A run of rows that are not Equal: one "change" to step through.
struct Hunk
{
    int firstRow = 0;
    int rowCount = 0;
    int leftStart = 0;  ///< first left line of the hunk (or where it would be, for a pure insertion)
    int leftCount = 0;  ///< left lines in the hunk
    int rightStart = 0; ///< first right line (or where it would be, for a pure deletion)
    int rightCount = 0;
};

struct Result
{
    QVector<Row> rows;
    QVector<Hunk> hunks;
    int leftLineCount = 0;
    int rightLineCount = 0;
    /// False when the size guard stopped the search: the hunk is then correct but may be larger
    /// than the smallest one.
    bool exact = true;

    bool identical() const { return hunks.isEmpty(); }
    int changedRows() const;
    int deletedRows() const;
    int insertedRows() const;
};

struct Options
{
    /// Edit distance (deleted + inserted lines, after prefix and suffix) above which the search stops.
    int maxEditDistance = 4000;
    /// Lines compare with trailing spaces and tabs removed (and "\r" from CRLF files).
    bool ignoreTrailingWhitespace = true;
};

/// Lines of a text as the views show them: split on '\n', a final newline adds no empty line,
/// "\r" before '\n' is dropped. An empty text has no lines.
QStringList splitLines(const QString& text);

Result diffLines(const QStringList& left, const QStringList& right, const Options& options = Options());
Result diffTexts(const QString& left, const QString& right, const Options& options = Options());

/// The differing ranges of two lines, token by token (see above): {left ranges, right ranges}.
/// Adjacent ranges merge; a range of spaces alone is dropped unless it is all that differs.
struct LineChanges
{
    QVector<Range> left;
    QVector<Range> right;
};
LineChanges diffLine(const QString& left, const QString& right);

} // namespace kwb::textdiff
