#include "app/editor/builtinhighlighter.h"

#include <QColor>
#include <QRegularExpression>
#include <QSet>

namespace kwb::app {

namespace {

// ---- block state ---------------------------------------------------------------------------------
// bits 0-3: code state; bits 4-6: the open fence's language (0: no fence); bit 7: the fence is
// '~'; bits 8-14: the fence's length; bit 15: a {{! comment }} is open.
constexpr int kCodeMask = 0xF;
constexpr int kCodeBlockComment = 1; // C: inside /* */
constexpr int kCodeTripleSingle = 2; // Python: inside '''
constexpr int kCodeTripleDouble = 3; // Python: inside """
constexpr int kFenceLangShift = 4;
constexpr int kFenceLangMask = 0x7 << kFenceLangShift;
constexpr int kFenceTilde = 1 << 7;
constexpr int kFenceLenShift = 8;
constexpr int kFenceLenMask = 0x7F << kFenceLenShift;
constexpr int kMustacheComment = 1 << 15;

// Fence languages as stored in the state.
enum FenceLang { NoFence = 0, FenceOther = 1, FenceCuda = 2, FenceCpp = 3, FencePython = 4 };

int fenceIdFor(Language language)
{
    switch (language) {
    case Language::Cuda: return FenceCuda;
    case Language::Cpp: return FenceCpp;
    case Language::Python: return FencePython;
    default: return FenceOther;
    }
}

Language languageForFenceId(int id)
{
    switch (id) {
    case FenceCuda: return Language::Cuda;
    case FenceCpp: return Language::Cpp;
    case FencePython: return Language::Python;
    default: return Language::Plain;
    }
}

const QSet<QString>& cKeywords()
{
    static const QSet<QString> words = [] {
        QSet<QString> s;
        for (const char* w :
             {"alignas",  "alignof",          "auto",       "break",    "case",     "catch",         "class",
              "const",    "constexpr",        "const_cast", "continue", "decltype", "default",       "delete",
              "do",       "dynamic_cast",     "else",       "enum",     "explicit", "extern",        "false",
              "for",      "friend",           "goto",       "if",       "inline",   "mutable",       "namespace",
              "new",      "noexcept",         "nullptr",    "operator", "private",  "protected",     "public",
              "register", "reinterpret_cast", "return",     "sizeof",   "static",   "static_assert", "static_cast",
              "struct",   "switch",           "template",   "this",     "throw",    "true",          "try",
              "typedef",  "typename",         "union",      "using",    "virtual",  "volatile",      "while",
              "restrict"})
            s.insert(QString::fromLatin1(w));
        return s;
    }();
    return words;
}

const QSet<QString>& cTypes()
{
    static const QSet<QString> words = [] {
        QSet<QString> s;
        for (const char* w :
             {"void",    "bool",     "char",     "short",     "int",     "long",     "float",   "double",
              "signed",  "unsigned", "size_t",   "ptrdiff_t", "int8_t",  "int16_t",  "int32_t", "int64_t",
              "uint8_t", "uint16_t", "uint32_t", "uint64_t",  "wchar_t", "char16_t", "char32_t"})
            s.insert(QString::fromLatin1(w));
        return s;
    }();
    return words;
}

/// CUDA's qualifiers, built-in variables, vector types and the intrinsics kernels use most.
const QSet<QString>& cudaWords()
{
    static const QSet<QString> words = [] {
        QSet<QString> s;
        for (const char* w : {"__global__",
                              "__device__",
                              "__host__",
                              "__shared__",
                              "__constant__",
                              "__managed__",
                              "__restrict__",
                              "__forceinline__",
                              "__noinline__",
                              "__launch_bounds__",
                              "__grid_constant__",
                              "threadIdx",
                              "blockIdx",
                              "blockDim",
                              "gridDim",
                              "warpSize",
                              "__syncthreads",
                              "__syncthreads_or",
                              "__syncthreads_and",
                              "__syncthreads_count",
                              "__syncwarp",
                              "__threadfence",
                              "__threadfence_block",
                              "__shfl_sync",
                              "__shfl_up_sync",
                              "__shfl_down_sync",
                              "__shfl_xor_sync",
                              "__ballot_sync",
                              "__any_sync",
                              "__all_sync",
                              "__activemask",
                              "__ldg",
                              "__ldcg",
                              "__stcg",
                              "__fdividef",
                              "__expf",
                              "__logf",
                              "__sinf",
                              "__cosf",
                              "__powf",
                              "__fmaf_rn",
                              "__fmul_rn",
                              "__fadd_rn",
                              "__int_as_float",
                              "__float_as_int",
                              "__float2half",
                              "__half2float",
                              "__float2bfloat16",
                              "__bfloat162float",
                              "atomicAdd",
                              "atomicSub",
                              "atomicMax",
                              "atomicMin",
                              "atomicExch",
                              "atomicCAS",
                              "atomicAnd",
                              "atomicOr",
                              "atomicXor",
                              "dim3",
                              "half",
                              "__half",
                              "__half2",
                              "__nv_bfloat16",
                              "__nv_bfloat162",
                              "float2",
                              "float3",
                              "float4",
                              "double2",
                              "double4",
                              "int2",
                              "int3",
                              "int4",
                              "uint2",
                              "uint3",
                              "uint4",
                              "char4",
                              "uchar4",
                              "longlong2",
                              "make_float2",
                              "make_float4",
                              "make_int2",
                              "make_int4",
                              "wmma",
                              "nvcuda",
                              "cooperative_groups"})
            s.insert(QString::fromLatin1(w));
        return s;
    }();
    return words;
}

const QSet<QString>& pythonKeywords()
{
    static const QSet<QString> words = [] {
        QSet<QString> s;
        for (const char* w : {"False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
                              "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
                              "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
                              "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"})
            s.insert(QString::fromLatin1(w));
        return s;
    }();
    return words;
}

/// TorchScript's annotation types and Python's built-in types.
const QSet<QString>& pythonTypes()
{
    static const QSet<QString> words = [] {
        QSet<QString> s;
        for (const char* w : {"Tensor", "Dict", "List", "Optional", "Tuple", "int", "float", "bool", "str", "object"})
            s.insert(QString::fromLatin1(w));
        return s;
    }();
    return words;
}

bool isWordStart(QChar c)
{
    return c.isLetter() || c == QLatin1Char('_');
}
bool isWordChar(QChar c)
{
    return c.isLetterOrNumber() || c == QLatin1Char('_');
}

int firstNonSpace(const QString& text, int from, int to)
{
    int i = from;
    while (i < to && text.at(i).isSpace())
        ++i;
    return i;
}

int scanNumber(const QString& text, int i, int to)
{
    int j = i;
    auto at = [&](int k) { return k < to ? text.at(k) : QChar(); };
    if (at(j) == QLatin1Char('0') && (at(j + 1) == QLatin1Char('x') || at(j + 1) == QLatin1Char('X'))) {
        j += 2;
        while (j < to && (at(j).isDigit() || QStringLiteral("abcdefABCDEF_'").contains(at(j))))
            ++j;
    } else {
        while (j < to && (at(j).isDigit() || at(j) == QLatin1Char('.') || at(j) == QLatin1Char('_') ||
                          at(j) == QLatin1Char('\'')))
            ++j;
        if (at(j) == QLatin1Char('e') || at(j) == QLatin1Char('E')) {
            ++j;
            if (at(j) == QLatin1Char('+') || at(j) == QLatin1Char('-'))
                ++j;
            while (j < to && at(j).isDigit())
                ++j;
        }
    }
    while (j < to && QStringLiteral("fFuUlLj").contains(at(j)))
        ++j;
    return j;
}

/// End of a one-line string starting at the quote `i` (past the closing quote, or `to`).
int scanString(const QString& text, int i, int to)
{
    const QChar quote = text.at(i);
    int j = i + 1;
    while (j < to && text.at(j) != quote) {
        if (text.at(j) == QLatin1Char('\\'))
            ++j;
        ++j;
    }
    return qMin(j + 1, to);
}

QColor mix(const QColor& fg, int alpha)
{
    QColor c = fg;
    c.setAlpha(alpha);
    return c;
}

} // namespace

BuiltinHighlighter::BuiltinHighlighter(QTextDocument* document, Language language, bool dark)
    : QSyntaxHighlighter(document)
    , m_language(language)
    , m_dark(dark)
{
    buildFormats();
}

void BuiltinHighlighter::setDark(bool dark)
{
    if (dark == m_dark)
        return;
    m_dark = dark;
    buildFormats();
    rehighlight();
}

void BuiltinHighlighter::buildFormats()
{
    // Two hand-picked palettes: each colour reads on white and on a near-black editor background.
    struct Style
    {
        Role role;
        const char* light;
        const char* dark;
        bool bold = false;
        bool italic = false;
        bool tinted = false; // a faint background of the same colour, so tags stand out in code
    };
    const Style styles[] = {
        {Role::Keyword, "#0033b3", "#cc7832", true},
        {Role::Type, "#267f99", "#4ec9b0"},
        {Role::CudaKeyword, "#8e24aa", "#d291ff", true},
        {Role::Preprocessor, "#9e6a03", "#bbb529"},
        {Role::String, "#067d17", "#98c379"},
        {Role::Number, "#1750eb", "#6897bb"},
        {Role::Comment, "#6e7781", "#7f848e", false, true},
        {Role::Function, "#00627a", "#ffc66d"},
        {Role::Decorator, "#9e880d", "#bbb529"},
        {Role::Heading, "#0550ae", "#61afef", true},
        {Role::Emphasis, "#24292f", "#d4d4d4", false, true},
        {Role::Strong, "#24292f", "#e6e6e6", true},
        {Role::InlineCode, "#953800", "#e5c07b"},
        {Role::Link, "#0969da", "#58a6ff"},
        {Role::ListMarker, "#cf222e", "#ff7b72", true},
        {Role::Quote, "#57606a", "#8b949e", false, true},
        {Role::Fence, "#8250df", "#a78bfa"},
        {Role::MustacheVariable, "#b35900", "#ffb86c", false, false, true},
        {Role::MustacheSection, "#a626a4", "#e38cf0", true, false, true},
        {Role::MustacheInverted, "#c4001d", "#ff6b81", true, false, true},
        {Role::MustachePartial, "#0184bc", "#56b6c2", true, false, true},
        {Role::MustacheComment, "#6e7781", "#7f848e", false, true},
    };
    for (const Style& s : styles) {
        QTextCharFormat f;
        const QColor color(QLatin1String(m_dark ? s.dark : s.light));
        f.setForeground(color);
        if (s.bold)
            f.setFontWeight(QFont::Bold);
        if (s.italic)
            f.setFontItalic(true);
        if (s.tinted)
            f.setBackground(mix(color, m_dark ? 40 : 28));
        m_formats[size_t(s.role)] = f;
    }
}

void BuiltinHighlighter::highlightBlock(const QString& text)
{
    const int previous = qMax(0, previousBlockState());
    const int length = int(text.size());
    switch (m_language) {
    case Language::Cuda:
    case Language::Cpp:
    case Language::Python:
        setCurrentBlockState(highlightCode(text, 0, length, m_language, previous & kCodeMask));
        break;
    case Language::Markdown: setCurrentBlockState(highlightMarkdown(text, previous & ~kMustacheComment)); break;
    case Language::Mustache: {
        const bool commentOpen = previous & kMustacheComment;
        if (commentOpen && !text.contains(QLatin1String("}}"))) {
            // A line wholly inside {{! … }} is not Markdown: a fence written there opens nothing.
            apply(0, length, Role::MustacheComment);
            setCurrentBlockState(previous);
            break;
        }
        const int markdown = highlightMarkdown(text, previous & ~kMustacheComment);
        const bool stillOpen = highlightMustache(text, commentOpen);
        setCurrentBlockState(markdown | (stillOpen ? kMustacheComment : 0));
        break;
    }
    case Language::Plain: setCurrentBlockState(0); break;
    }
}

int BuiltinHighlighter::highlightCode(const QString& text, int from, int to, Language language, int state)
{
    switch (language) {
    case Language::Cuda: return highlightCLike(text, from, to, true, state);
    case Language::Cpp: return highlightCLike(text, from, to, false, state);
    case Language::Python: return highlightPython(text, from, to, state);
    default: return 0;
    }
}

int BuiltinHighlighter::highlightCLike(const QString& text, int from, int to, bool cuda, int state)
{
    int i = from;
    if (state == kCodeBlockComment) {
        const int end = int(text.indexOf(QLatin1String("*/"), i));
        if (end < 0 || end + 2 > to) {
            apply(i, to - i, Role::Comment);
            return kCodeBlockComment;
        }
        apply(i, end + 2 - i, Role::Comment);
        i = end + 2;
    }
    const int lineStart = firstNonSpace(text, from, to);
    while (i < to) {
        const QChar c = text.at(i);
        const QChar next = i + 1 < to ? text.at(i + 1) : QChar();
        if (c == QLatin1Char('/') && next == QLatin1Char('/')) {
            apply(i, to - i, Role::Comment);
            return 0;
        }
        if (c == QLatin1Char('/') && next == QLatin1Char('*')) {
            const int end = int(text.indexOf(QLatin1String("*/"), i + 2));
            if (end < 0 || end + 2 > to) {
                apply(i, to - i, Role::Comment);
                return kCodeBlockComment;
            }
            apply(i, end + 2 - i, Role::Comment);
            i = end + 2;
            continue;
        }
        if (c == QLatin1Char('"') || c == QLatin1Char('\'')) {
            const int end = scanString(text, i, to);
            apply(i, end - i, Role::String);
            i = end;
            continue;
        }
        if (c == QLatin1Char('#') && i == lineStart) {
            int j = firstNonSpace(text, i + 1, to);
            const int wordStart = j;
            while (j < to && isWordChar(text.at(j)))
                ++j;
            apply(i, j - i, Role::Preprocessor);
            if (text.mid(wordStart, j - wordStart) == QLatin1String("include")) {
                const int open = int(text.indexOf(QLatin1Char('<'), j));
                const int close = open < 0 ? -1 : int(text.indexOf(QLatin1Char('>'), open));
                if (open >= 0 && close >= 0 && close < to) {
                    apply(open, close + 1 - open, Role::String);
                    j = close + 1;
                }
            }
            i = j;
            continue;
        }
        if (c.isDigit() || (c == QLatin1Char('.') && next.isDigit())) {
            const int end = scanNumber(text, i, to);
            apply(i, end - i, Role::Number);
            i = end;
            continue;
        }
        if (isWordStart(c)) {
            int j = i;
            while (j < to && isWordChar(text.at(j)))
                ++j;
            const QString word = text.mid(i, j - i);
            if (cuda && cudaWords().contains(word)) {
                apply(i, j - i, Role::CudaKeyword);
            } else if (cKeywords().contains(word)) {
                apply(i, j - i, Role::Keyword);
            } else if (cTypes().contains(word)) {
                apply(i, j - i, Role::Type);
            } else {
                const int k = firstNonSpace(text, j, to);
                if (k < to && text.at(k) == QLatin1Char('('))
                    apply(i, j - i, Role::Function);
            }
            i = j;
            continue;
        }
        ++i;
    }
    return 0;
}

int BuiltinHighlighter::highlightPython(const QString& text, int from, int to, int state)
{
    int i = from;
    if (state == kCodeTripleSingle || state == kCodeTripleDouble) {
        const QString quote = state == kCodeTripleSingle ? QStringLiteral("'''") : QStringLiteral("\"\"\"");
        const int end = int(text.indexOf(quote, i));
        if (end < 0 || end + 3 > to) {
            apply(i, to - i, Role::String);
            return state;
        }
        apply(i, end + 3 - i, Role::String);
        i = end + 3;
    }
    const int lineStart = firstNonSpace(text, from, to);
    bool nameFollows = false; // after `def` or `class`
    while (i < to) {
        const QChar c = text.at(i);
        if (c == QLatin1Char('#')) {
            apply(i, to - i, Role::Comment);
            return 0;
        }
        // String prefixes: r"…", b'…', f"…", rb"…".
        int quoteAt = i;
        while (quoteAt < to && quoteAt - i < 2 && QStringLiteral("rRbBuUfF").contains(text.at(quoteAt)))
            ++quoteAt;
        if (quoteAt < to && (text.at(quoteAt) == QLatin1Char('"') || text.at(quoteAt) == QLatin1Char('\'')) &&
            (quoteAt == i || i == from || !isWordChar(text.at(i - 1)))) {
            const QChar q = text.at(quoteAt);
            const QString triple(3, q);
            if (text.mid(quoteAt, 3) == triple) {
                const int end = int(text.indexOf(triple, quoteAt + 3));
                if (end < 0 || end + 3 > to) {
                    apply(i, to - i, Role::String);
                    return q == QLatin1Char('\'') ? kCodeTripleSingle : kCodeTripleDouble;
                }
                apply(i, end + 3 - i, Role::String);
                i = end + 3;
            } else {
                const int end = scanString(text, quoteAt, to);
                apply(i, end - i, Role::String);
                i = end;
            }
            continue;
        }
        if (c == QLatin1Char('@') && i == lineStart) {
            int j = i + 1;
            while (j < to && (isWordChar(text.at(j)) || text.at(j) == QLatin1Char('.')))
                ++j;
            apply(i, j - i, Role::Decorator);
            i = j;
            continue;
        }
        if (c.isDigit() || (c == QLatin1Char('.') && i + 1 < to && text.at(i + 1).isDigit())) {
            const int end = scanNumber(text, i, to);
            apply(i, end - i, Role::Number);
            i = end;
            continue;
        }
        if (isWordStart(c)) {
            int j = i;
            while (j < to && isWordChar(text.at(j)))
                ++j;
            const QString word = text.mid(i, j - i);
            if (nameFollows) {
                apply(i, j - i, Role::Function);
                nameFollows = false;
            } else if (pythonKeywords().contains(word)) {
                apply(i, j - i, Role::Keyword);
                nameFollows = word == QLatin1String("def") || word == QLatin1String("class");
            } else if (pythonTypes().contains(word)) {
                apply(i, j - i, Role::Type);
            } else if (word == QLatin1String("kb")) {
                apply(i, j - i, Role::CudaKeyword); // kb.launch: where host code starts a kernel
            } else {
                const int k = firstNonSpace(text, j, to);
                if (k < to && text.at(k) == QLatin1Char('('))
                    apply(i, j - i, Role::Function);
            }
            i = j;
            continue;
        }
        ++i;
    }
    return 0;
}

int BuiltinHighlighter::highlightMarkdown(const QString& text, int state)
{
    const int length = int(text.size());
    const int fenceId = (state & kFenceLangMask) >> kFenceLangShift;
    if (fenceId != NoFence) {
        const QChar fenceChar = (state & kFenceTilde) ? QLatin1Char('~') : QLatin1Char('`');
        const int fenceLength = (state & kFenceLenMask) >> kFenceLenShift;
        const QString trimmed = text.trimmed();
        const int indent = firstNonSpace(text, 0, length);
        if (indent <= 3 && trimmed.size() >= fenceLength && trimmed == QString(trimmed.size(), fenceChar)) {
            apply(0, length, Role::Fence);
            return 0;
        }
        const Language inner = languageForFenceId(fenceId);
        int code = state & kCodeMask;
        if (inner == Language::Plain)
            apply(0, length, Role::InlineCode);
        else
            code = highlightCode(text, 0, length, inner, code);
        return (state & ~kCodeMask) | code;
    }

    static const QRegularExpression fence(QStringLiteral("^ {0,3}(`{3,}|~{3,})\\s*([^\\s`]*)"));
    const QRegularExpressionMatch open = fence.match(text);
    if (open.hasMatch() &&
        !(open.captured(1).startsWith(QLatin1Char('`')) && text.mid(open.capturedEnd(1)).contains(QLatin1Char('`')))) {
        apply(0, length, Role::Fence);
        const QString marker = open.captured(1);
        const int id = fenceIdFor(languageForFenceTag(open.captured(2)));
        return (id << kFenceLangShift) | (marker.startsWith(QLatin1Char('~')) ? kFenceTilde : 0) |
               (qMin(int(marker.size()), 127) << kFenceLenShift);
    }

    static const QRegularExpression heading(QStringLiteral("^ {0,3}#{1,6}(\\s|$)"));
    if (heading.match(text).hasMatch()) {
        apply(0, length, Role::Heading);
        highlightInlineMarkdown(text, 0);
        // Headings stay headings: only code spans inside them change colour.
        return 0;
    }
    static const QRegularExpression quote(QStringLiteral("^\\s*>"));
    if (quote.match(text).hasMatch()) {
        apply(0, length, Role::Quote);
        return 0;
    }
    static const QRegularExpression rule(QStringLiteral("^ {0,3}([-*_])( *\\1){2,} *$"));
    if (rule.match(text).hasMatch()) {
        apply(0, length, Role::ListMarker);
        return 0;
    }
    int from = 0;
    static const QRegularExpression listMarker(QStringLiteral("^\\s*([-*+]|\\d{1,9}[.)])\\s"));
    const QRegularExpressionMatch item = listMarker.match(text);
    if (item.hasMatch()) {
        apply(item.capturedStart(1), int(item.capturedLength(1)), Role::ListMarker);
        from = int(item.capturedEnd(0));
    }
    highlightInlineMarkdown(text, from);
    return 0;
}

void BuiltinHighlighter::highlightInlineMarkdown(const QString& text, int from)
{
    static const QRegularExpression strong(QStringLiteral("(\\*\\*|__)(?=\\S)(.+?)(?<=\\S)\\1"));
    static const QRegularExpression emphasis(QStringLiteral("(?<![\\w*])([*_])(?=\\S)(.+?)(?<=\\S)\\1(?![\\w*])"));
    static const QRegularExpression link(QStringLiteral("\\[[^\\]]+\\]\\([^)\\s]+\\)|<https?://[^>\\s]+>"));
    static const QRegularExpression code(QStringLiteral("(`+)(.+?)\\1"));
    auto each = [&](const QRegularExpression& re, Role role) {
        auto it = re.globalMatch(text, from);
        while (it.hasNext()) {
            const QRegularExpressionMatch m = it.next();
            apply(int(m.capturedStart()), int(m.capturedLength()), role);
        }
    };
    each(emphasis, Role::Emphasis);
    each(strong, Role::Strong);
    each(link, Role::Link);
    each(code, Role::InlineCode); // last: nothing inside a code span is emphasis
}

bool BuiltinHighlighter::highlightMustache(const QString& text, bool commentOpen)
{
    const int length = int(text.size());
    int i = 0;
    if (commentOpen) {
        const int end = int(text.indexOf(QLatin1String("}}")));
        if (end < 0) {
            apply(0, length, Role::MustacheComment);
            return true;
        }
        apply(0, end + 2, Role::MustacheComment);
        i = end + 2;
    }
    while (i < length) {
        const int open = int(text.indexOf(QLatin1String("{{"), i));
        if (open < 0)
            break;
        const bool triple = text.mid(open, 3) == QLatin1String("{{{");
        const int contentStart = open + (triple ? 3 : 2);
        const int close = int(text.indexOf(triple ? QLatin1String("}}}") : QLatin1String("}}"), contentStart));
        const int sigilAt = firstNonSpace(text, contentStart, length);
        const QChar sigil = sigilAt < length ? text.at(sigilAt) : QChar();
        if (!triple && sigil == QLatin1Char('!')) {
            if (close < 0) {
                apply(open, length - open, Role::MustacheComment);
                return true;
            }
            apply(open, close + 2 - open, Role::MustacheComment);
            i = close + 2;
            continue;
        }
        Role role = Role::MustacheVariable;
        if (!triple) {
            if (sigil == QLatin1Char('#') || sigil == QLatin1Char('/'))
                role = Role::MustacheSection;
            else if (sigil == QLatin1Char('^'))
                role = Role::MustacheInverted;
            else if (sigil == QLatin1Char('>'))
                role = Role::MustachePartial;
        }
        if (close < 0) { // an unclosed tag: the renderer reports it; colour it to the end
            apply(open, length - open, role);
            break;
        }
        const int end = close + (triple ? 3 : 2);
        apply(open, end - open, role);
        i = end;
    }
    return false;
}

} // namespace kwb::app
