// core/textdiff: hand-checked line diffs, pairing into changed rows, intra-line ranges, the size
// guard, and on random texts a minimal script (as many equal rows as the longest common
// subsequence) whose rows rebuild both sides.

#include "core/study/textdiff.h"

#include <QRandomGenerator>
#include <QTest>

#include <vector>

using namespace kwb::textdiff;

namespace {

QStringList lines(const char* text)
{
    return splitLines(QString::fromUtf8(text));
}

int lcsLength(const QStringList& a, const QStringList& b)
{
    std::vector<std::vector<int>> t(size_t(a.size() + 1), std::vector<int>(size_t(b.size() + 1), 0));
    for (int i = int(a.size()) - 1; i >= 0; --i)
        for (int j = int(b.size()) - 1; j >= 0; --j)
            t[size_t(i)][size_t(j)] = a[i] == b[j] ? t[size_t(i + 1)][size_t(j + 1)] + 1
                                                   : std::max(t[size_t(i + 1)][size_t(j)], t[size_t(i)][size_t(j + 1)]);
    return t[0][0];
}

int rowsOf(const Result& r, RowKind kind)
{
    int n = 0;
    for (const Row& row : r.rows)
        n += row.kind == kind ? 1 : 0;
    return n;
}

} // namespace

class TestTextDiff : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void splitsLines()
    {
        QCOMPARE(splitLines(QString()), QStringList());
        QCOMPARE(splitLines(QStringLiteral("a\r\nb\n")), (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
        QCOMPARE(splitLines(QStringLiteral("a\n\n")), (QStringList{QStringLiteral("a"), QString()}));
        QCOMPARE(splitLines(QStringLiteral("a")), QStringList{QStringLiteral("a")});
    }

    void identicalTextsHaveNoHunks()
    {
        const Result r = diffTexts(QStringLiteral("a\nb\nc\n"), QStringLiteral("a\nb\nc\n"));
        QVERIFY(r.identical());
        QCOMPARE(r.rows.size(), 3);
        for (int i = 0; i < 3; ++i) {
            QCOMPARE(r.rows[i].kind, RowKind::Equal);
            QCOMPARE(r.rows[i].leftLine, i);
            QCOMPARE(r.rows[i].rightLine, i);
        }
        QVERIFY(r.exact);
    }

    void insertionIntoEmpty()
    {
        const Result r = diffTexts(QString(), QStringLiteral("a\nb\n"));
        QCOMPARE(r.rows.size(), 2);
        QCOMPARE(r.rows[0].kind, RowKind::Inserted);
        QCOMPARE(r.rows[0].leftLine, -1);
        QCOMPARE(r.rows[1].rightLine, 1);
        QCOMPARE(r.hunks.size(), 1);
        const Hunk h = r.hunks[0];
        QCOMPARE(h.firstRow, 0);
        QCOMPARE(h.rowCount, 2);
        QCOMPARE(h.leftStart, 0);
        QCOMPARE(h.leftCount, 0);
        QCOMPARE(h.rightStart, 0);
        QCOMPARE(h.rightCount, 2);
    }

    void deletionInTheMiddle()
    {
        // a b c -> a c: b is deleted; the right side gets a filler row.
        const Result r = diffLines(lines("a\nb\nc"), lines("a\nc"));
        QCOMPARE(r.rows.size(), 3);
        QCOMPARE(r.rows[0].kind, RowKind::Equal);
        QCOMPARE(r.rows[1].kind, RowKind::Deleted);
        QCOMPARE(r.rows[1].leftLine, 1);
        QCOMPARE(r.rows[1].rightLine, -1);
        QCOMPARE(r.rows[2].kind, RowKind::Equal);
        QCOMPARE(r.rows[2].leftLine, 2);
        QCOMPARE(r.rows[2].rightLine, 1);
        QCOMPARE(r.hunks.size(), 1);
        QCOMPARE(r.hunks[0].firstRow, 1);
        QCOMPARE(r.hunks[0].leftStart, 1);
        QCOMPARE(r.hunks[0].leftCount, 1);
        QCOMPARE(r.hunks[0].rightStart, 1);
        QCOMPARE(r.hunks[0].rightCount, 0);
    }

    void myersPaperExample()
    {
        // Myers (1986), Fig. 1: A = ABCABBA, B = CBABAC, D = 5: an LCS of 4, 3 deletions, 2 insertions.
        const Result r = diffLines(lines("A\nB\nC\nA\nB\nB\nA"), lines("C\nB\nA\nB\nA\nC"));
        QCOMPARE(rowsOf(r, RowKind::Equal), 4);
        int deleted = 0, inserted = 0;
        for (const Hunk& h : r.hunks) {
            deleted += h.leftCount;
            inserted += h.rightCount;
        }
        QCOMPARE(deleted, 3);
        QCOMPARE(inserted, 2);
    }

    void alikeLinesPairAsChanged()
    {
        // int x = 1; int y = 2; -> int x = 3;: the x lines pair (changed), the y line is deleted.
        const Result r = diffLines(lines("a\nint x = 1;\nint y = 2;\nb"), lines("a\nint x = 3;\nb"));
        QCOMPARE(r.rows.size(), 4);
        QCOMPARE(r.rows[1].kind, RowKind::Changed);
        QCOMPARE(r.rows[1].leftLine, 1);
        QCOMPARE(r.rows[1].rightLine, 1);
        QCOMPARE(r.rows[1].leftChanges, (QVector<Range>{{8, 1}}));
        QCOMPARE(r.rows[2].kind, RowKind::Deleted);
        QCOMPARE(r.rows[2].leftLine, 2);
        QCOMPARE(r.hunks.size(), 1);
        QCOMPARE(r.hunks[0].rowCount, 2);
        QCOMPARE(r.hunks[0].leftCount, 2);
        QCOMPARE(r.hunks[0].rightCount, 1);
        QCOMPARE(r.changedRows(), 1);
        QCOMPARE(r.deletedRows(), 1);
        QCOMPARE(r.insertedRows(), 0);
    }

    void pairsByLikenessNotPosition()
    {
        // Two comment lines go, the signature changes: it pairs with its new version, the
        // comments are deleted above it (as in the reference and wrong_result fixtures).
        const Result r = diffLines(lines("// first comment\n// second comment\nvoid k(int C, int hw)\n{"),
                                   lines("void k(long long n, int C, int hw)\n{"));
        QCOMPARE(r.rows.size(), 4);
        QCOMPARE(r.rows[0].kind, RowKind::Deleted);
        QCOMPARE(r.rows[1].kind, RowKind::Deleted);
        QCOMPARE(r.rows[2].kind, RowKind::Changed);
        QCOMPARE(r.rows[2].leftLine, 2);
        QCOMPARE(r.rows[2].rightLine, 0);
        QCOMPARE(r.rows[3].kind, RowKind::Equal);
    }

    void unrelatedLinesStayDeletedAndInserted()
    {
        const Result r = diffLines(lines("a\nreturn torch.relu(x)\nb"), lines("a\n#pragma unroll\nb"));
        QCOMPARE(r.rows.size(), 4);
        QCOMPARE(r.rows[1].kind, RowKind::Deleted);
        QCOMPARE(r.rows[2].kind, RowKind::Inserted);
        QCOMPARE(r.hunks.size(), 1);
        QCOMPARE(r.hunks[0].rowCount, 2);
    }

    void twoSeparateHunks()
    {
        const Result r = diffLines(lines("1\n2\n3\n4\nline 5"), lines("1\nX\n3\n4\nline 6"));
        QCOMPARE(r.hunks.size(), 2);
        QCOMPARE(r.hunks[0].firstRow, 1);
        QCOMPARE(r.hunks[0].rowCount, 2); // "2" and "X" are not alike: deleted, then inserted
        QCOMPARE(r.hunks[1].firstRow, 5);
        QCOMPARE(r.rows[5].kind, RowKind::Changed);
    }

    void intraLineOperator()
    {
        // "int x = a + b;": the '+' at column 10 becomes '-'.
        const LineChanges c = diffLine(QStringLiteral("int x = a + b;"), QStringLiteral("int x = a - b;"));
        QCOMPARE(c.left, (QVector<Range>{{10, 1}}));
        QCOMPARE(c.right, (QVector<Range>{{10, 1}}));
    }

    void intraLineInsertionJoinsAcrossSpaces()
    {
        // " + b" is inserted before ';' (columns 14..17): one range, nothing on the left.
        const LineChanges c = diffLine(QStringLiteral("float v = y[i];"), QStringLiteral("float v = y[i] + b;"));
        QVERIFY(c.left.isEmpty());
        QCOMPARE(c.right, (QVector<Range>{{14, 4}}));
    }

    void intraLineIdentifierRename()
    {
        // bias[i % C] -> bias[(i / hw) % C]: "(" goes in before i, "/ hw)" after it.
        const QString left = QStringLiteral("y[i] = v + bias[i % C];");
        const QString right = QStringLiteral("y[i] = v + bias[(i / hw) % C];");
        const LineChanges c = diffLine(left, right);
        QCOMPARE(c.left.size(), 0);
        // Which of the equal-cost scripts Myers picks decides where the spaces go; the tokens do not.
        QString inserted;
        for (const Range& r : c.right)
            inserted += right.mid(r.start, r.length);
        QCOMPARE(inserted.remove(QLatin1Char(' ')), QStringLiteral("(/hw)"));
        QCOMPARE(c.right.size(), 2);
    }

    void onlyIndentationDiffers()
    {
        const LineChanges c = diffLine(QStringLiteral("  x"), QStringLiteral("    x"));
        QCOMPARE(c.left, (QVector<Range>{{0, 2}}));
        QCOMPARE(c.right, (QVector<Range>{{0, 4}}));
    }

    void trailingWhitespace()
    {
        QVERIFY(diffTexts(QStringLiteral("a \nb\t\n"), QStringLiteral("a\nb\n")).identical());
        Options strict;
        strict.ignoreTrailingWhitespace = false;
        QCOMPARE(diffTexts(QStringLiteral("a \nb\n"), QStringLiteral("a\nb\n"), strict).hunks.size(), 1);
    }

    void sizeGuardReplacesTheMiddle()
    {
        Options small;
        small.maxEditDistance = 2;
        const QStringList left = lines("p\nline 1\nline 2\nline 3\ns");
        const QStringList right = lines("p\nline 4\nline 2\nline 6\ns");
        const Result r = diffLines(left, right, small);
        QVERIFY(!r.exact);
        // The middle is replaced whole, even its equal line; alike lines still pair.
        QCOMPARE(r.rows.size(), 5);
        QCOMPARE(r.rows[0].kind, RowKind::Equal);
        for (int i = 1; i <= 3; ++i)
            QCOMPARE(r.rows[i].kind, RowKind::Changed);
        QCOMPARE(r.rows[4].kind, RowKind::Equal);
        QCOMPARE(r.hunks.size(), 1);
        // Within the guard the same texts diff exactly: two hunks around the equal "line 2".
        const Result exact = diffLines(left, right);
        QVERIFY(exact.exact);
        QCOMPARE(exact.hunks.size(), 2);
    }

    void randomTextsAreMinimalAndRebuildBothSides()
    {
        QRandomGenerator rng(20261130);
        const QStringList alphabet{QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")};
        for (int round = 0; round < 300; ++round) {
            QStringList a, b;
            const int n = rng.bounded(13), m = rng.bounded(13);
            for (int i = 0; i < n; ++i)
                a << alphabet[rng.bounded(3)];
            for (int i = 0; i < m; ++i)
                b << alphabet[rng.bounded(3)];
            const Result r = diffLines(a, b);
            QVERIFY(r.exact);
            QCOMPARE(rowsOf(r, RowKind::Equal), lcsLength(a, b));
            int nextLeft = 0, nextRight = 0;
            for (const Row& row : r.rows) {
                if (row.leftLine >= 0)
                    QCOMPARE(row.leftLine, nextLeft++);
                if (row.rightLine >= 0)
                    QCOMPARE(row.rightLine, nextRight++);
                if (row.kind == RowKind::Equal)
                    QCOMPARE(a[row.leftLine], b[row.rightLine]);
                QCOMPARE(row.leftLine < 0, row.kind == RowKind::Inserted);
                QCOMPARE(row.rightLine < 0, row.kind == RowKind::Deleted);
            }
            QCOMPARE(nextLeft, n);
            QCOMPARE(nextRight, m);
            int hunkRows = 0;
            for (const Hunk& h : r.hunks) {
                hunkRows += h.rowCount;
                QVERIFY(h.rowCount > 0);
                QVERIFY(r.rows[h.firstRow].kind != RowKind::Equal);
                if (h.firstRow > 0)
                    QCOMPARE(r.rows[h.firstRow - 1].kind, RowKind::Equal); // hunks are maximal runs
            }
            QCOMPARE(hunkRows, int(r.rows.size()) - rowsOf(r, RowKind::Equal));
        }
    }
};

QTEST_APPLESS_MAIN(TestTextDiff)
#include "tst_textdiff.moc"
