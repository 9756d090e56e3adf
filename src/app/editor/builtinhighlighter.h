#pragma once
// The highlighter used when KSyntaxHighlighting is not there (syntaxhighlighting.h decides): a
// small hand-written scanner per language, enough for what the workbench shows: CUDA device code,
// C++, Python/TorchScript host code, Markdown answers and prompts (fenced ```cuda and ```python
// blocks coloured in their language) and Mustache templates (Markdown plus {{tags}}).
//
// One int of block state carries what continues onto the next line: a C block comment, a Python
// triple-quoted string, an open Markdown fence (its character, length and language) and an open
// {{! comment }}.

#include "app/editor/syntaxhighlighting.h"

#include <QSyntaxHighlighter>
#include <QTextCharFormat>

#include <array>

namespace kwb::app {

class BuiltinHighlighter : public QSyntaxHighlighter
{
    Q_OBJECT
public:
    /// What a piece of text is; each has one format per palette (light or dark).
    enum class Role {
        Keyword,
        Type,
        CudaKeyword, ///< __global__, __shared__, threadIdx, __syncthreads, …
        Preprocessor,
        String,
        Number,
        Comment,
        Function,
        Decorator,
        Heading,
        Emphasis,
        Strong,
        InlineCode,
        Link,
        ListMarker,
        Quote,
        Fence,
        MustacheVariable,
        MustacheSection, ///< {{#x}} and {{/x}}
        MustacheInverted,
        MustachePartial,
        MustacheComment,
        Count
    };

    BuiltinHighlighter(QTextDocument* document, Language language, bool dark);

    Language language() const { return m_language; }
    bool isDark() const { return m_dark; }
    /// Switches the colours and re-highlights the document.
    void setDark(bool dark);
    /// The format text of this role gets, in the current palette.
    QTextCharFormat format(Role role) const { return m_formats[size_t(role)]; }

protected:
    void highlightBlock(const QString& text) override;

private:
    void buildFormats();
    /// Colours text[from, to) as code and returns the code state at its end.
    int highlightCode(const QString& text, int from, int to, Language language, int state);
    int highlightCLike(const QString& text, int from, int to, bool cuda, int state);
    int highlightPython(const QString& text, int from, int to, int state);
    /// Colours a Markdown line; returns the block state (fence bits and code state).
    int highlightMarkdown(const QString& text, int state);
    void highlightInlineMarkdown(const QString& text, int from);
    /// Colours {{tags}} over whatever is there; returns whether a {{! comment }} stays open.
    bool highlightMustache(const QString& text, bool commentOpen);
    void apply(int start, int length, Role role) { setFormat(start, length, m_formats[size_t(role)]); }

    Language m_language;
    bool m_dark;
    std::array<QTextCharFormat, size_t(Role::Count)> m_formats;
};

} // namespace kwb::app
