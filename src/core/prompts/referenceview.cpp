#include "core/prompts/referenceview.h"

#include <algorithm>

namespace kwb {

namespace {

/// A line with the integers that may vary between repeated blocks cut out.
struct NumberedLine
{
    QString text;
    QString norm;              ///< text with each integer replaced by '\x01'
    QList<qint64> numbers;     ///< the integers, in order
    QList<QPair<int, int>> at; ///< (position, length) of each in text
};

/// Integers inside `p["..."]` keys, or anywhere in a comment line.
NumberedLine numberForwardLine(const QString& line)
{
    NumberedLine n;
    n.text = line;
    const bool comment = line.trimmed().startsWith(QLatin1Char('#'));
    QList<QPair<int, int>> ranges; // where integers count
    if (comment) {
        ranges.append({0, int(line.size())});
    } else {
        qsizetype from = 0;
        while (true) {
            const qsizetype open = line.indexOf(QLatin1String("p[\""), from);
            if (open < 0)
                break;
            const qsizetype close = line.indexOf(QLatin1String("\"]"), open + 3);
            if (close < 0)
                break;
            ranges.append({int(open + 3), int(close - open - 3)});
            from = close + 2;
        }
    }
    for (const auto& [start, length] : ranges) {
        int i = start;
        while (i < start + length) {
            if (!line.at(i).isDigit()) {
                ++i;
                continue;
            }
            int j = i;
            while (j < start + length && line.at(j).isDigit())
                ++j;
            n.numbers.append(line.mid(i, j - i).toLongLong());
            n.at.append({i, j - i});
            i = j;
        }
    }
    n.norm = line;
    for (qsizetype k = n.at.size() - 1; k >= 0; --k)
        n.norm.replace(n.at[k].first, n.at[k].second, QChar(1));
    return n;
}

/// Integers in the name part of a "- `name`: shape" line (the shape must match exactly).
NumberedLine numberParamLine(const QString& line)
{
    NumberedLine n;
    n.text = line;
    const qsizetype open = line.indexOf(QLatin1Char('`'));
    const qsizetype close = open < 0 ? -1 : line.indexOf(QLatin1Char('`'), open + 1);
    if (close > open) {
        int i = int(open) + 1;
        while (i < close) {
            if (!line.at(i).isDigit()) {
                ++i;
                continue;
            }
            int j = i;
            while (j < close && line.at(j).isDigit())
                ++j;
            n.numbers.append(line.mid(i, j - i).toLongLong());
            n.at.append({i, j - i});
            i = j;
        }
    }
    n.norm = line;
    for (qsizetype k = n.at.size() - 1; k >= 0; --k)
        n.norm.replace(n.at[k].first, n.at[k].second, QChar(1));
    return n;
}

/// A run of `repeats` blocks of `length` lines from `start`; block k's varying integers are
/// block 0's plus k * step, every other integer is the same.
struct Fold
{
    int start = 0;
    int length = 0;
    int repeats = 0;
    qint64 step = 0;
    QList<QList<bool>> varying; ///< per line of block 0, per integer
};

/// Whether the block at `b` is the block at `a` shifted by `k` steps: fills fold.step and
/// fold.varying from the first comparison (k == 1).
bool sameModuloIndex(const QList<NumberedLine>& lines, int a, int b, int length, int k, Fold* fold)
{
    for (int j = 0; j < length; ++j) {
        const NumberedLine& x = lines[a + j];
        const NumberedLine& y = lines[b + j];
        if (x.norm != y.norm || x.numbers.size() != y.numbers.size())
            return false;
    }
    if (k == 1) {
        qint64 step = 0;
        QList<QList<bool>> varying;
        for (int j = 0; j < length; ++j) {
            const NumberedLine& x = lines[a + j];
            const NumberedLine& y = lines[b + j];
            QList<bool> v;
            for (qsizetype m = 0; m < x.numbers.size(); ++m) {
                const qint64 d = y.numbers[m] - x.numbers[m];
                if (d != 0 && (d < 0 || (step != 0 && d != step)))
                    return false;
                if (d != 0)
                    step = d;
                v.append(d != 0);
            }
            varying.append(v);
        }
        if (step == 0)
            return false; // identical blocks: nothing to index by
        fold->step = step;
        fold->varying = varying;
        return true;
    }
    for (int j = 0; j < length; ++j) {
        const NumberedLine& x = lines[a + j];
        const NumberedLine& y = lines[b + j];
        for (qsizetype m = 0; m < x.numbers.size(); ++m)
            if (y.numbers[m] - x.numbers[m] != (fold->varying[j][m] ? k * fold->step : 0))
                return false;
    }
    return true;
}

constexpr int kMinRepeats = 3; ///< two blocks are shown as they are
constexpr int kMaxBlockLines = 64;

/// Greedy from the top: at each line the fold that saves the most lines, if any.
QList<Fold> findFolds(const QList<NumberedLine>& lines)
{
    QList<Fold> folds;
    const int n = int(lines.size());
    int i = 0;
    while (i < n) {
        Fold best;
        for (int length = 1; length <= kMaxBlockLines && i + kMinRepeats * length <= n; ++length) {
            Fold f;
            f.start = i;
            f.length = length;
            f.repeats = 1;
            while (i + (f.repeats + 1) * length <= n &&
                   sameModuloIndex(lines, i, i + f.repeats * length, length, f.repeats, &f))
                ++f.repeats;
            if (f.repeats >= kMinRepeats &&
                qint64(f.length) * (f.repeats - 1) > qint64(best.length) * (best.repeats - 1))
                best = f;
        }
        if (best.repeats >= kMinRepeats) {
            folds.append(best);
            i += best.length * best.repeats;
        } else {
            ++i;
        }
    }
    return folds;
}

qint64 firstVarying(const QList<NumberedLine>& lines, const Fold& f)
{
    for (int j = 0; j < f.length; ++j)
        for (qsizetype m = 0; m < f.varying[j].size(); ++m)
            if (f.varying[j][m])
                return lines[f.start + j].numbers[m];
    return 0;
}

QString leadingSpace(const QString& line)
{
    qsizetype k = 0;
    while (k < line.size() && line.at(k).isSpace())
        ++k;
    return line.left(k);
}

template <typename Render>
QStringList applyFolds(const QList<NumberedLine>& lines, Render render)
{
    const QList<Fold> folds = findFolds(lines);
    QStringList out;
    int i = 0;
    for (const Fold& f : folds) {
        for (; i < f.start; ++i)
            out << lines[i].text;
        out << render(f);
        i = f.start + f.length * f.repeats;
    }
    for (; i < lines.size(); ++i)
        out << lines[i].text;
    return out;
}

} // namespace

QString foldForward(const QString& forward, bool* folded)
{
    QList<NumberedLine> lines;
    for (const QString& line : forward.split(QLatin1Char('\n')))
        lines.append(numberForwardLine(line));
    bool any = false;
    const QStringList out = applyFolds(lines, [&](const Fold& f) {
        any = true;
        const qint64 base = firstVarying(lines, f);
        const QString indent = leadingSpace(lines[f.start].text);
        const QString end = QString::number(base + f.repeats * f.step);
        QStringList block;
        block << indent + (f.step == 1 ? QStringLiteral("for i in range(%1, %2):").arg(base).arg(end)
                                       : QStringLiteral("for i in range(%1, %2, %3):").arg(base).arg(end).arg(f.step));
        for (int j = 0; j < f.length; ++j) {
            const NumberedLine& l = lines[f.start + j];
            const bool comment = l.text.trimmed().startsWith(QLatin1Char('#'));
            QString text = l.text;
            for (qsizetype m = l.numbers.size() - 1; m >= 0; --m) {
                if (!f.varying[j][m])
                    continue;
                const qint64 offset = l.numbers[m] - base;
                const QString var = offset == 0
                                        ? QStringLiteral("i")
                                        : QStringLiteral("i %1 %2").arg(offset > 0 ? '+' : '-').arg(qAbs(offset));
                const QString piece =
                    comment ? QStringLiteral("{%1}").arg(var) : QStringLiteral("\" + str(%1) + \"").arg(var);
                text.replace(l.at[m].first, l.at[m].second, piece);
            }
            block << QStringLiteral("    ") + text;
        }
        return block;
    });
    if (folded)
        *folded = any;
    return out.join(QLatin1Char('\n'));
}

QString paramsView(const QList<ReferenceParam>& params)
{
    // Consecutive parameters with the same prefix (the name up to its last '.') and shape.
    QStringList grouped;
    for (qsizetype i = 0; i < params.size();) {
        const qsizetype dot = params[i].name.lastIndexOf(QLatin1Char('.'));
        const QString prefix = dot < 0 ? QString() : params[i].name.left(dot + 1);
        qsizetype j = i + 1;
        while (!prefix.isEmpty() && j < params.size() && params[j].shape == params[i].shape &&
               params[j].name.startsWith(prefix) && params[j].name.lastIndexOf(QLatin1Char('.')) == dot)
            ++j;
        if (j - i == 1) {
            grouped << QStringLiteral("- `%1`: %2").arg(params[i].name, params[i].shape);
        } else {
            QStringList leaves;
            for (qsizetype k = i; k < j; ++k)
                leaves << params[k].name.mid(dot + 1);
            grouped << QStringLiteral("- `%1{%2}`: %3").arg(prefix, leaves.join(QStringLiteral(", ")), params[i].shape);
        }
        i = j;
    }
    QList<NumberedLine> lines;
    for (const QString& line : std::as_const(grouped))
        lines.append(numberParamLine(line));
    const QStringList out = applyFolds(lines, [&](const Fold& f) {
        QStringList block;
        for (int j = 0; j < f.length; ++j) {
            const NumberedLine& l = lines[f.start + j];
            QString text = l.text;
            for (qsizetype m = l.numbers.size() - 1; m >= 0; --m) {
                if (!f.varying[j][m])
                    continue;
                const qint64 first = l.numbers[m];
                const qint64 last = first + (f.repeats - 1) * f.step;
                const QString range = f.step == 1 ? QStringLiteral("{%1..%2}").arg(first).arg(last)
                                                  : QStringLiteral("{%1..%2 step %3}").arg(first).arg(last).arg(f.step);
                text.replace(l.at[m].first, l.at[m].second, range);
            }
            block << text;
        }
        return block;
    });
    return out.join(QLatin1Char('\n'));
}

} // namespace kwb
