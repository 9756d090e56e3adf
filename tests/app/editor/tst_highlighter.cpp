// The built-in highlighter: what it colours is read back from each block's QTextLayout formats
// (CUDA keywords, C++ comments across lines, Python strings across lines, Markdown fences coloured
// in their language, Mustache tags by kind), and the colours switch with a dark palette. Also the
// adapter: file names to languages and which backend was built.

#include "app/editor/builtinhighlighter.h"
#include "app/editor/syntaxhighlighting.h"

#include <QApplication>
#include <QPalette>
#include <QTest>
#include <QTextBlock>
#include <QTextDocument>
#include <QTextLayout>

#include <memory>

using namespace kwb::app;
using Role = BuiltinHighlighter::Role;

namespace {

/// The highlighter's format at column `column` of line `line` (0-based), or an empty format.
QTextCharFormat formatAt(const QTextDocument& doc, int line, int column)
{
    const QTextBlock block = doc.findBlockByNumber(line);
    for (const QTextLayout::FormatRange& r : block.layout()->formats())
        if (column >= r.start && column < r.start + r.length)
            return r.format;
    return {};
}

/// The same role's colour at every column of [from, to).
bool coloured(const BuiltinHighlighter& h, const QTextDocument& doc, int line, int from, int to, Role role)
{
    const QColor want = h.format(role).foreground().color();
    for (int c = from; c < to; ++c)
        if (formatAt(doc, line, c).foreground().color() != want)
            return false;
    return true;
}

struct Highlighted
{
    QTextDocument doc;
    std::unique_ptr<BuiltinHighlighter> highlighter;
    Highlighted(const QString& text, Language language, bool dark = false)
    {
        doc.setPlainText(text);
        highlighter = std::make_unique<BuiltinHighlighter>(&doc, language, dark);
        highlighter->rehighlight();
    }
    bool is(int line, int from, int to, Role role) const { return coloured(*highlighter, doc, line, from, to, role); }
    bool plain(int line, int column) const
    {
        return !formatAt(doc, line, column).hasProperty(QTextFormat::ForegroundBrush);
    }
};

} // namespace

class TestHighlighter : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void formatsAreDistinct()
    {
        QTextDocument doc;
        const BuiltinHighlighter h(&doc, Language::Cuda, false);
        QVERIFY(h.format(Role::CudaKeyword).foreground().color() != h.format(Role::Keyword).foreground().color());
        QVERIFY(h.format(Role::MustacheSection).foreground().color() !=
                h.format(Role::MustacheVariable).foreground().color());
    }

    void cudaKeywordsAndBuiltins()
    {
        const Highlighted h(QStringLiteral("extern \"C\" __global__ void k(float* y) {\n"
                                           "    int i = blockIdx.x * blockDim.x + threadIdx.x; // one per element\n"
                                           "    __syncthreads();\n"
                                           "}"),
                            Language::Cuda);
        QVERIFY(h.is(0, 0, 6, Role::Keyword));       // extern
        QVERIFY(h.is(0, 7, 10, Role::String));       // "C"
        QVERIFY(h.is(0, 11, 21, Role::CudaKeyword)); // __global__
        QVERIFY(h.is(0, 22, 26, Role::Type));        // void
        QVERIFY(h.is(0, 27, 28, Role::Function));    // k(
        QVERIFY(h.is(1, 12, 20, Role::CudaKeyword)); // blockIdx
        QVERIFY(h.is(1, 38, 47, Role::CudaKeyword)); // threadIdx
        QVERIFY(h.is(1, 51, 67, Role::Comment));
        QVERIFY(h.is(2, 4, 17, Role::CudaKeyword)); // __syncthreads
        QVERIFY(h.plain(1, 23));                    // the '*'
    }

    void cppHasNoCudaWordsAndCommentsSpanLines()
    {
        const Highlighted h(
            QStringLiteral("int x = 0x1F; /* a\nstill */ __global__ float y = 1.5e-3f;\n#include <cuda_fp16.h>"),
            Language::Cpp);
        QVERIFY(h.is(0, 8, 12, Role::Number));
        QVERIFY(h.is(0, 14, 18, Role::Comment));
        QVERIFY(h.is(1, 0, 8, Role::Comment));
        QVERIFY(h.plain(1, 9)); // no CUDA in C++
        QVERIFY(h.is(1, 20, 25, Role::Type));
        QVERIFY(h.is(1, 30, 37, Role::Number));
        QVERIFY(h.is(2, 0, 8, Role::Preprocessor));
        QVERIFY(h.is(2, 9, 22, Role::String));
        QCOMPARE(h.doc.findBlockByNumber(0).userState(), 1); // the block comment is open at the end of line 1
        QCOMPARE(h.doc.findBlockByNumber(1).userState(), 0);
    }

    void pythonTorchScript()
    {
        const Highlighted h(QStringLiteral("def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n"
                                           "    \"\"\"Doc\n"
                                           "    more\"\"\"  # after\n"
                                           "    kb.launch(\"k\", [1], [256], x)  # launch\n"
                                           "    return x"),
                            Language::Python);
        QVERIFY(h.is(0, 0, 3, Role::Keyword));
        QVERIFY(h.is(0, 4, 11, Role::Function));
        QVERIFY(h.is(0, 15, 21, Role::Type));
        QVERIFY(h.is(1, 4, 10, Role::String));
        QVERIFY(h.is(2, 4, 11, Role::String)); // the docstring goes on to its closing quotes
        QVERIFY(h.is(2, 13, 20, Role::Comment));
        QVERIFY(h.is(3, 4, 6, Role::CudaKeyword)); // kb
        QVERIFY(h.is(3, 7, 13, Role::Function));   // launch(
        QVERIFY(h.is(3, 14, 17, Role::String));
        QVERIFY(h.is(4, 4, 10, Role::Keyword));
    }

    void markdownFencesUseTheirLanguage()
    {
        const Highlighted h(QStringLiteral("# Answer\n"
                                           "Some **bold** and `code`.\n"
                                           "```cuda\n"
                                           "__global__ void k() {}\n"
                                           "```\n"
                                           "```python\n"
                                           "def forward(x: Tensor) -> Tensor:\n"
                                           "```\n"
                                           "threadIdx after the fence"),
                            Language::Markdown);
        QVERIFY(h.is(0, 0, 8, Role::Heading));
        QVERIFY(h.is(1, 5, 13, Role::Strong));
        QVERIFY(h.is(1, 18, 24, Role::InlineCode));
        QVERIFY(h.is(2, 0, 7, Role::Fence));
        QVERIFY(h.is(3, 0, 10, Role::CudaKeyword));
        QVERIFY(h.is(4, 0, 3, Role::Fence));
        QVERIFY(h.is(6, 0, 3, Role::Keyword));
        QVERIFY(h.is(6, 15, 21, Role::Type));
        QVERIFY(h.plain(8, 0)); // prose again: no CUDA colours
    }

    void longerFencesCloseOnlyWithTheirLength()
    {
        const Highlighted h(QStringLiteral("````markdown\n```cuda\n```\ntext\n````\nafter"), Language::Markdown);
        // Inside the four-backtick fence the three-backtick lines are its content, not fences.
        QVERIFY(h.is(1, 0, 7, Role::InlineCode));
        QVERIFY(h.is(3, 0, 4, Role::InlineCode));
        QVERIFY(h.is(4, 0, 4, Role::Fence));
        QVERIFY(h.plain(5, 0));
    }

    void mustacheTagsByKind()
    {
        const Highlighted h(QStringLiteral("Task {{task_id}}: {{#inputs}}- {{name}}{{/inputs}}\n"
                                           "{{^params}}none{{/params}} {{> task}} {{{reference}}}\n"
                                           "{{! a comment\n"
                                           "over lines }} after\n"
                                           "```python\n"
                                           "{{reference}}\n"
                                           "```"),
                            Language::Mustache);
        QVERIFY(h.is(0, 5, 16, Role::MustacheVariable));
        QVERIFY(h.is(0, 18, 29, Role::MustacheSection));
        QVERIFY(h.is(0, 31, 39, Role::MustacheVariable));
        QVERIFY(h.is(0, 39, 50, Role::MustacheSection));
        QVERIFY(h.plain(0, 0));
        QVERIFY(h.is(1, 0, 11, Role::MustacheInverted));
        QVERIFY(h.is(1, 27, 37, Role::MustachePartial));
        QVERIFY(h.is(1, 38, 53, Role::MustacheVariable)); // {{{reference}}}
        QVERIFY(h.is(2, 0, 13, Role::MustacheComment));
        QVERIFY(h.is(3, 0, 13, Role::MustacheComment));
        QVERIFY(h.plain(3, 15));
        QVERIFY(h.is(5, 0, 13, Role::MustacheVariable)); // a tag inside a code fence is still a tag
        // The tag's background tint sets it off inside code too.
        QVERIFY(formatAt(h.doc, 0, 6).background().style() != Qt::NoBrush);
    }

    void darkPaletteChangesColours()
    {
        Highlighted h(QStringLiteral("__global__ void k();"), Language::Cuda);
        const QColor light = formatAt(h.doc, 0, 0).foreground().color();
        h.highlighter->setDark(true);
        QVERIFY(h.highlighter->isDark());
        const QColor dark = formatAt(h.doc, 0, 0).foreground().color();
        QVERIFY(light != dark);
        QVERIFY(dark.lightness() > light.lightness()); // light text for a dark background
        QPalette darkPalette;
        darkPalette.setColor(QPalette::Base, QColor(30, 30, 30));
        QVERIFY(isDarkPalette(darkPalette));
        darkPalette.setColor(QPalette::Base, Qt::white);
        QVERIFY(!isDarkPalette(darkPalette));
        applyPalette(h.highlighter.get(), darkPalette);
        QCOMPARE(formatAt(h.doc, 0, 0).foreground().color(), light);
    }

    void languagesFromFileNamesAndFences()
    {
        QCOMPARE(languageForFileName(QStringLiteral("k.cu")), Language::Cuda);
        QCOMPARE(languageForFileName(QStringLiteral("K.CUH")), Language::Cuda);
        QCOMPARE(languageForFileName(QStringLiteral("a/b.hpp")), Language::Cpp);
        QCOMPARE(languageForFileName(QStringLiteral("forward.py")), Language::Python);
        QCOMPARE(languageForFileName(QStringLiteral("answer.md")), Language::Markdown);
        QCOMPARE(languageForFileName(QStringLiteral("agent/generator.mustache")), Language::Mustache);
        QCOMPARE(languageForFileName(QStringLiteral("manifest.toml")), Language::Plain);
        QCOMPARE(languageForFenceTag(QStringLiteral("CUDA")), Language::Cuda);
        QCOMPARE(languageForFenceTag(QStringLiteral("c++")), Language::Cpp);
        QCOMPARE(languageForFenceTag(QStringLiteral("torchscript")), Language::Python);
        QCOMPARE(languageForFenceTag(QStringLiteral("text")), Language::Plain);
    }

    void adapterMakesAHighlighterPerLanguage()
    {
        QTextDocument doc;
        QCOMPARE(createHighlighter(&doc, Language::Plain), nullptr);
        QSyntaxHighlighter* h = createHighlighter(&doc, Language::Cuda);
        QVERIFY(h);
        QCOMPARE(h->parent(), &doc); // owned by the document
        const QString backend = highlighterBackend();
#ifdef KWB_HAVE_KSYNTAXHIGHLIGHTING
        QVERIFY(backend.startsWith(QLatin1String("KSyntaxHighlighting ")));
#else
        QCOMPARE(backend, QStringLiteral("built-in"));
        QVERIFY(qobject_cast<BuiltinHighlighter*>(h));
        // The built-in one colours __global__ as CUDA in a document made through the adapter.
        doc.setPlainText(QStringLiteral("__global__ void k();"));
        h->rehighlight();
        QCOMPARE(formatAt(doc, 0, 0).foreground().color(),
                 static_cast<BuiltinHighlighter*>(h)->format(Role::CudaKeyword).foreground().color());
#endif
    }
};

QTEST_MAIN(TestHighlighter)
#include "tst_highlighter.moc"
