#pragma once
// The one place that decides how code is coloured. Built with KWB_HAVE_KSYNTAXHIGHLIGHTING
// (src/app/editor/CMakeLists.txt: KF6SyntaxHighlighting, or a KF5 one built against Qt 6) it uses
// KDE's KSyntaxHighlighting with the theme that matches the palette; otherwise, and for what that
// library has no definition of, the built-in highlighter (builtinhighlighter.h).

#include <QString>

class QPalette;
class QSyntaxHighlighter;
class QTextDocument;

namespace kwb::app {

enum class Language {
    Plain,
    Cuda,     ///< CUDA C++ device code (the answer's ```cuda block)
    Cpp,      ///< C and C++
    Python,   ///< Python and TorchScript (the answer's ```python block)
    Markdown, ///< model answers and rendered prompts; fenced ```cuda / ```python blocks coloured inside
    Mustache, ///< prompt templates: Markdown with {{tags}}
};

/// "CUDA", "C++", "Python", … for menus and tooltips.
QString languageName(Language language);

/// By suffix: .cu .cuh -> Cuda; .c .cc .cpp .cxx .h .hh .hpp -> Cpp; .py -> Python;
/// .md .markdown -> Markdown; .mustache .hbs -> Mustache; anything else Plain.
Language languageForFileName(const QString& fileName);

/// A Markdown fence's tag ("cuda", "cu", "cpp", "c++", "python", "py", "torchscript", …); Plain
/// when the tag names no language we colour.
Language languageForFenceTag(const QString& tag);

/// A highlighter for `document`, owned by the document; nullptr for Plain. Its colours follow the
/// application palette at creation: call applyPalette() when a widget's palette changes.
QSyntaxHighlighter* createHighlighter(QTextDocument* document, Language language);

/// Re-colours `highlighter` (made by createHighlighter) for a light or dark palette.
void applyPalette(QSyntaxHighlighter* highlighter, const QPalette& palette);

/// "KSyntaxHighlighting 6.8.0" or "built-in", for the About box and logs.
QString highlighterBackend();

/// True when the palette's base colour is dark (text is light on it).
bool isDarkPalette(const QPalette& palette);

} // namespace kwb::app
