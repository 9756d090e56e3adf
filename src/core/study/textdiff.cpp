#include "core/study/textdiff.h"

#include <QHash>

#include <algorithm>
#include <optional>
#include <vector>

namespace kwb::textdiff {

namespace {

enum class Op : char { Equal, Delete, Insert };

/// Myers' greedy O(ND) search over two symbol sequences, a[aBegin, aEnd) against b[bBegin, bEnd).
/// Keeps the furthest-reaching x of every diagonal for each D (O(D²) memory) to walk back the
/// script. Returns nothing when D would exceed maxD.
std::optional<std::vector<Op>> myers(const std::vector<int>& a, int aBegin, int aEnd, const std::vector<int>& b,
                                     int bBegin, int bEnd, int maxD)
{
    const int n = aEnd - aBegin;
    const int m = bEnd - bBegin;
    const int limit = std::min(n + m, std::max(0, maxD));
    const int offset = limit + 1;
    std::vector<int> v(size_t(2 * limit + 3), 0);
    std::vector<std::vector<int>> trace; // trace[d][k + d] = furthest x on diagonal k after step d

    int found = -1;
    for (int d = 0; d <= limit && found < 0; ++d) {
        for (int k = -d; k <= d; k += 2) {
            int x = (k == -d || (k != d && v[size_t(offset + k - 1)] < v[size_t(offset + k + 1)]))
                        ? v[size_t(offset + k + 1)]
                        : v[size_t(offset + k - 1)] + 1;
            int y = x - k;
            while (x < n && y < m && a[size_t(aBegin + x)] == b[size_t(bBegin + y)]) {
                ++x;
                ++y;
            }
            v[size_t(offset + k)] = x;
            if (x >= n && y >= m)
                found = d;
        }
        trace.emplace_back(v.begin() + (offset - d), v.begin() + (offset + d + 1));
    }
    if (found < 0)
        return std::nullopt;

    std::vector<Op> reversed;
    int x = n, y = m;
    for (int d = found; d > 0; --d) {
        const std::vector<int>& prev = trace[size_t(d - 1)];
        auto prevX = [&](int k) { return prev[size_t(k + d - 1)]; };
        const int k = x - y;
        const bool down = k == -d || (k != d && prevX(k - 1) < prevX(k + 1)); // down = an insertion
        const int prevK = down ? k + 1 : k - 1;
        const int startX = prevX(prevK);
        const int startY = startX - prevK;
        const int moveX = down ? startX : startX + 1;
        const int moveY = down ? startY + 1 : startY;
        while (x > moveX && y > moveY) {
            reversed.push_back(Op::Equal);
            --x;
            --y;
        }
        reversed.push_back(down ? Op::Insert : Op::Delete);
        x = startX;
        y = startY;
    }
    while (x > 0 && y > 0) {
        reversed.push_back(Op::Equal);
        --x;
        --y;
    }
    return std::vector<Op>(reversed.rbegin(), reversed.rend());
}

/// The whole edit script of a against b: common prefix and suffix first, Myers in between, and
/// when that is too far apart, the middle deleted and inserted whole (*exact = false).
std::vector<Op> editScript(const std::vector<int>& a, const std::vector<int>& b, int maxD, bool* exact)
{
    int prefix = 0;
    const int n = int(a.size()), m = int(b.size());
    while (prefix < n && prefix < m && a[size_t(prefix)] == b[size_t(prefix)])
        ++prefix;
    int suffix = 0;
    while (suffix < n - prefix && suffix < m - prefix && a[size_t(n - 1 - suffix)] == b[size_t(m - 1 - suffix)])
        ++suffix;

    std::vector<Op> ops(size_t(prefix), Op::Equal);
    if (auto middle = myers(a, prefix, n - suffix, b, prefix, m - suffix, maxD)) {
        ops.insert(ops.end(), middle->begin(), middle->end());
    } else {
        *exact = false;
        ops.insert(ops.end(), size_t(n - suffix - prefix), Op::Delete);
        ops.insert(ops.end(), size_t(m - suffix - prefix), Op::Insert);
    }
    ops.insert(ops.end(), size_t(suffix), Op::Equal);
    return ops;
}

QString withoutTrailingWhitespace(const QString& line)
{
    qsizetype end = line.size();
    while (end > 0) {
        const QChar c = line.at(end - 1);
        if (c != QLatin1Char(' ') && c != QLatin1Char('\t') && c != QLatin1Char('\r'))
            break;
        --end;
    }
    return line.left(end);
}

// ---- tokens for the intra-line diff ------------------------------------------------------------

struct Token
{
    int start = 0;
    int length = 0;
    bool space = false;
};

bool isWordChar(QChar c)
{
    return c.isLetterOrNumber() || c == QLatin1Char('_');
}

std::vector<Token> tokenize(const QString& line)
{
    std::vector<Token> out;
    const int n = int(line.size());
    int i = 0;
    while (i < n) {
        const QChar c = line.at(i);
        int j = i + 1;
        bool space = false;
        if (isWordChar(c)) {
            while (j < n && isWordChar(line.at(j)))
                ++j;
        } else if (c.isSpace()) {
            space = true;
            while (j < n && line.at(j).isSpace())
                ++j;
        }
        out.push_back({i, j - i, space});
        i = j;
    }
    return out;
}

/// Ranges of the marked tokens; marked tokens separated only by unmarked spaces join into one range.
QVector<Range> tokenRanges(const std::vector<Token>& tokens, const std::vector<bool>& marked)
{
    QVector<Range> out;
    int pendingSpaceEnd = -1; // end of unmarked spaces right after the last range
    for (size_t i = 0; i < tokens.size(); ++i) {
        const Token& t = tokens[i];
        if (!marked[i]) {
            if (t.space && !out.isEmpty() && out.constLast().start + out.constLast().length == t.start)
                pendingSpaceEnd = t.start + t.length;
            else if (!t.space)
                pendingSpaceEnd = -1;
            continue;
        }
        if (!out.isEmpty() && (out.constLast().start + out.constLast().length == t.start || pendingSpaceEnd == t.start))
            out.last().length = t.start + t.length - out.constLast().start;
        else
            out.append({t.start, t.length});
        pendingSpaceEnd = -1;
    }
    return out;
}

/// Drops ranges that hold only spaces, unless nothing else differs.
QVector<Range> withoutSpaceOnly(const QString& line, const QVector<Range>& ranges, bool keepAll)
{
    if (keepAll)
        return ranges;
    QVector<Range> out;
    for (const Range& r : ranges)
        if (!line.mid(r.start, r.length).trimmed().isEmpty())
            out.append(r);
    return out;
}

// ---- pairing deleted and inserted lines ------------------------------------------------------

/// Dice coefficient of the character bigrams of the trimmed lines: 1 for the same text, near 0
/// for unrelated ones. Cheap enough to score every pair of a hunk.
double similarity(const QString& a, const QString& b)
{
    const QString x = a.trimmed(), y = b.trimmed();
    if (x == y)
        return 1.0;
    if (x.size() < 2 || y.size() < 2)
        return 0.0;
    QHash<quint32, int> bigrams;
    for (qsizetype i = 0; i + 1 < x.size(); ++i)
        ++bigrams[(quint32(x.at(i).unicode()) << 16) | x.at(i + 1).unicode()];
    int shared = 0;
    for (qsizetype i = 0; i + 1 < y.size(); ++i) {
        auto it = bigrams.find((quint32(y.at(i).unicode()) << 16) | y.at(i + 1).unicode());
        if (it != bigrams.end() && it.value() > 0) {
            --it.value();
            ++shared;
        }
    }
    return 2.0 * shared / double(x.size() - 1 + y.size() - 1);
}

constexpr double kPairThreshold = 0.5;
constexpr qsizetype kPairCells = 40000; // deleted × inserted lines aligned by similarity; above, in order

/// Which deleted line pairs with which inserted one, in order: the monotone matching with the
/// highest total similarity, counting only pairs at least kPairThreshold alike (so a rewritten
/// line next to an edited one is not paired with it). Returns (deleted index, inserted index).
QVector<QPair<int, int>> pairLines(const QStringList& left, const QVector<int>& deleted, const QStringList& right,
                                   const QVector<int>& inserted)
{
    QVector<QPair<int, int>> pairs;
    const int n = int(deleted.size()), m = int(inserted.size());
    if (n == 0 || m == 0)
        return pairs;
    if (qsizetype(n) * m > kPairCells) {
        for (int k = 0; k < qMin(n, m); ++k)
            if (similarity(left[deleted[k]], right[inserted[k]]) >= kPairThreshold)
                pairs.append({k, k});
        return pairs;
    }
    std::vector<double> best(size_t((n + 1) * (m + 1)), 0.0);
    std::vector<double> sim(size_t(n * m), 0.0);
    auto at = [m](int i, int j) { return size_t(i * (m + 1) + j); };
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < m; ++j)
            sim[size_t(i * m + j)] = similarity(left[deleted[i]], right[inserted[j]]);
    for (int i = 1; i <= n; ++i) {
        for (int j = 1; j <= m; ++j) {
            double v = std::max(best[at(i - 1, j)], best[at(i, j - 1)]);
            const double s = sim[size_t((i - 1) * m + (j - 1))];
            if (s >= kPairThreshold)
                v = std::max(v, best[at(i - 1, j - 1)] + s);
            best[at(i, j)] = v;
        }
    }
    for (int i = n, j = m; i > 0 && j > 0;) {
        const double s = sim[size_t((i - 1) * m + (j - 1))];
        if (s >= kPairThreshold && best[at(i, j)] == best[at(i - 1, j - 1)] + s) {
            pairs.prepend({i - 1, j - 1});
            --i;
            --j;
        } else if (best[at(i, j)] == best[at(i - 1, j)]) {
            --i;
        } else {
            --j;
        }
    }
    return pairs;
}

} // namespace

int Result::changedRows() const
{
    return int(std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.kind == RowKind::Changed; }));
}

int Result::deletedRows() const
{
    return int(std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.kind == RowKind::Deleted; }));
}

int Result::insertedRows() const
{
    return int(std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.kind == RowKind::Inserted; }));
}

QStringList splitLines(const QString& text)
{
    if (text.isEmpty())
        return {};
    QStringList lines = text.split(QLatin1Char('\n'));
    if (text.endsWith(QLatin1Char('\n')))
        lines.removeLast();
    for (QString& line : lines)
        if (line.endsWith(QLatin1Char('\r')))
            line.chop(1);
    return lines;
}

LineChanges diffLine(const QString& left, const QString& right)
{
    const std::vector<Token> lt = tokenize(left);
    const std::vector<Token> rt = tokenize(right);
    QHash<QString, int> ids;
    ids.reserve(int(lt.size() + rt.size()));
    auto idOf = [&ids](const QString& s) {
        const auto it = ids.constFind(s);
        if (it != ids.constEnd())
            return it.value();
        const int id = int(ids.size());
        ids.insert(s, id);
        return id;
    };
    std::vector<int> a, b;
    for (const Token& t : lt)
        a.push_back(idOf(left.mid(t.start, t.length)));
    for (const Token& t : rt)
        b.push_back(idOf(right.mid(t.start, t.length)));

    bool exact = true;
    const std::vector<Op> ops = editScript(a, b, 256, &exact);
    std::vector<bool> leftMarked(lt.size(), false), rightMarked(rt.size(), false);
    size_t i = 0, j = 0;
    for (const Op op : ops) {
        switch (op) {
        case Op::Equal:
            ++i;
            ++j;
            break;
        case Op::Delete: leftMarked[i++] = true; break;
        case Op::Insert: rightMarked[j++] = true; break;
        }
    }
    LineChanges out;
    out.left = tokenRanges(lt, leftMarked);
    out.right = tokenRanges(rt, rightMarked);
    // Only indentation or spacing differs: show that rather than nothing.
    auto allSpace = [](const QString& line, const QVector<Range>& ranges) {
        for (const Range& r : ranges)
            if (!line.mid(r.start, r.length).trimmed().isEmpty())
                return false;
        return true;
    };
    const bool onlySpace = allSpace(left, out.left) && allSpace(right, out.right);
    out.left = withoutSpaceOnly(left, out.left, onlySpace);
    out.right = withoutSpaceOnly(right, out.right, onlySpace);
    return out;
}

Result diffLines(const QStringList& left, const QStringList& right, const Options& options)
{
    QHash<QString, int> ids;
    auto encode = [&](const QStringList& lines) {
        std::vector<int> out;
        out.reserve(size_t(lines.size()));
        for (const QString& line : lines) {
            const QString key = options.ignoreTrailingWhitespace ? withoutTrailingWhitespace(line) : line;
            const auto it = ids.constFind(key);
            if (it != ids.constEnd()) {
                out.push_back(it.value());
            } else {
                const int id = int(ids.size());
                ids.insert(key, id);
                out.push_back(id);
            }
        }
        return out;
    };
    const std::vector<int> a = encode(left);
    const std::vector<int> b = encode(right);

    Result result;
    result.leftLineCount = int(left.size());
    result.rightLineCount = int(right.size());
    const std::vector<Op> ops = editScript(a, b, options.maxEditDistance, &result.exact);

    int li = 0, ri = 0;
    size_t k = 0;
    while (k < ops.size()) {
        if (ops[k] == Op::Equal) {
            Row row;
            row.leftLine = li++;
            row.rightLine = ri++;
            result.rows.append(row);
            ++k;
            continue;
        }
        // A run of deletions and insertions between two equal lines: one hunk.
        Hunk hunk;
        hunk.firstRow = int(result.rows.size());
        hunk.leftStart = li;
        hunk.rightStart = ri;
        QVector<int> deleted, inserted;
        for (; k < ops.size() && ops[k] != Op::Equal; ++k) {
            if (ops[k] == Op::Delete)
                deleted.append(li++);
            else
                inserted.append(ri++);
        }
        // Rows in order: unpaired deleted lines, then unpaired inserted ones, before each pair.
        const QVector<QPair<int, int>> pairs = pairLines(left, deleted, right, inserted);
        int d = 0, in = 0;
        auto flush = [&](int deletedUpTo, int insertedUpTo) {
            for (; d < deletedUpTo; ++d) {
                Row row;
                row.kind = RowKind::Deleted;
                row.leftLine = deleted[d];
                result.rows.append(row);
            }
            for (; in < insertedUpTo; ++in) {
                Row row;
                row.kind = RowKind::Inserted;
                row.rightLine = inserted[in];
                result.rows.append(row);
            }
        };
        for (const auto& [pd, pi] : pairs) {
            flush(pd, pi);
            Row row;
            row.kind = RowKind::Changed;
            row.leftLine = deleted[pd];
            row.rightLine = inserted[pi];
            const LineChanges changes = diffLine(left[row.leftLine], right[row.rightLine]);
            row.leftChanges = changes.left;
            row.rightChanges = changes.right;
            result.rows.append(row);
            d = pd + 1;
            in = pi + 1;
        }
        flush(int(deleted.size()), int(inserted.size()));
        hunk.rowCount = int(result.rows.size()) - hunk.firstRow;
        hunk.leftCount = int(deleted.size());
        hunk.rightCount = int(inserted.size());
        result.hunks.append(hunk);
    }
    return result;
}

Result diffTexts(const QString& left, const QString& right, const Options& options)
{
    return diffLines(splitLines(left), splitLines(right), options);
}

} // namespace kwb::textdiff
