#include "worker/answers/sourcecheck.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>

namespace kwb {
namespace {

bool isIdentChar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

SourceIssue limitIssue(const std::string& what, int line)
{
    return {"host_code_limit",
            "host code " + what + " (python block line " + std::to_string(line) +
                "); write it more simply (the limits are in docs/sandbox.md)",
            line};
}

} // namespace

// ---- TorchScript host code ------------------------------------------------------------------

std::optional<SourceIssue> checkHostCodeShape(const std::string& s)
{
    using L = HostCodeLimits;
    const std::size_t n = s.size();
    std::vector<std::size_t> indents{0};
    // elif branches open at each indentation level: the parser nests each elif inside the if it
    // continues (a chain of ~3,200 overflowed the stack), so they count as nested blocks.
    std::vector<int> elifs{0};
    int elifSum = 0;
    int functions = 0;
    int line = 1, depth = 0, ops = 0, statementLine = 1;
    std::size_t statementStart = 0;
    bool lineStart = true; // at the start of a physical line that begins a statement
    std::size_t i = 0;
    auto statementTooLong = [&]() { return i - statementStart > std::size_t(L::kMaxLogicalLine); };
    while (i < n) {
        if (lineStart) {
            lineStart = false;
            std::size_t w = 0, j = i;
            for (; j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\f'); ++j)
                w = s[j] == '\t' ? (w / 8 + 1) * 8 : w + 1;
            const bool blank = j >= n || s[j] == '\n' || s[j] == '\r' || s[j] == '#';
            if (!blank) {
                if (w > indents.back()) {
                    indents.push_back(w);
                    elifs.push_back(0);
                } else {
                    while (indents.size() > 1 && w < indents.back()) {
                        indents.pop_back();
                        elifSum -= elifs.back();
                        elifs.pop_back();
                    }
                }
                std::size_t k = j;
                while (k < n && isIdentChar(s[k]))
                    ++k;
                const std::string word = s.substr(j, k - j);
                if (word == "def" && ++functions > L::kMaxFunctions)
                    return limitIssue("defines more than " + std::to_string(L::kMaxFunctions) + " functions", line);
                if (word == "elif") {
                    ++elifs.back();
                    ++elifSum;
                } else if (word != "else") {
                    elifSum -= elifs.back();
                    elifs.back() = 0;
                }
                if (int(indents.size()) - 1 + elifSum > L::kMaxBlockDepth)
                    return limitIssue("nests blocks deeper than " + std::to_string(L::kMaxBlockDepth) +
                                          " levels (each elif nests one more)",
                                      line);
            }
            statementStart = j;
            statementLine = line;
            i = j;
            continue;
        }
        const char c = s[i];
        if (c == '\n') {
            ++line;
            ++i;
            if (depth == 0) {
                ops = 0;
                lineStart = true;
            }
            continue;
        }
        if (c == '#') {
            while (i < n && s[i] != '\n')
                ++i;
            continue;
        }
        if (c == '\\' && (i + 1 < n && (s[i + 1] == '\n' || (s[i + 1] == '\r' && i + 2 < n && s[i + 2] == '\n')))) {
            i += s[i + 1] == '\n' ? 2 : 3; // explicit line joining: the statement goes on
            ++line;
            continue;
        }
        if (c == '\'' || c == '"') {
            const bool triple = i + 2 < n && s[i + 1] == c && s[i + 2] == c;
            i += triple ? 3 : 1;
            while (i < n) {
                if (s[i] == '\\' && i + 1 < n) {
                    if (s[i + 1] == '\n')
                        ++line;
                    i += 2;
                } else if (triple && s[i] == c && i + 2 < n && s[i + 1] == c && s[i + 2] == c) {
                    i += 3;
                    break;
                } else if (!triple && s[i] == c) {
                    ++i;
                    break;
                } else if (s[i] == '\n') {
                    if (!triple)
                        break; // unterminated: the parser reports it
                    ++line;
                    ++i;
                } else {
                    ++i;
                }
            }
            if (statementTooLong())
                return limitIssue("has a statement longer than " + std::to_string(L::kMaxLogicalLine) + " characters",
                                  statementLine);
            continue;
        }
        if (isIdentChar(c)) {
            const std::size_t b = i;
            while (i < n && isIdentChar(s[i]))
                ++i;
            const std::size_t len = i - b;
            static const char* keywordOps[] = {"and", "or", "not", "if", "else", "in", "is", "lambda", "for"};
            if (len <= 6)
                for (const char* k : keywordOps)
                    if (std::strlen(k) == len && s.compare(b, len, k) == 0)
                        ++ops;
        } else if (c == '(' || c == '[' || c == '{') {
            ++ops; // calls and subscripts chain like operators: f()()(), x[0][0]
            if (++depth > L::kMaxBracketDepth)
                return limitIssue("nests brackets deeper than " + std::to_string(L::kMaxBracketDepth), line);
            ++i;
        } else if (c == ')' || c == ']' || c == '}') {
            if (depth > 0)
                --depth;
            ++i;
        } else if (std::strchr("+-*/%@&|^~<>!.=", c)) {
            static const char* opChars = "+-*/%@&|^~<>!.=:";
            const bool loneEquals = c == '=' && (i == 0 || !std::strchr(opChars, s[i - 1])) &&
                                    (i + 1 >= n || !std::strchr(opChars, s[i + 1]));
            if (!loneEquals)
                ++ops; // each character: `----x` nests as deeply as `- - - - x`
            ++i;
        } else {
            ++i;
        }
        if (ops > L::kMaxOperators)
            return limitIssue("has a statement with more than " + std::to_string(L::kMaxOperators) + " operators",
                              statementLine);
        if (statementTooLong())
            return limitIssue("has a statement longer than " + std::to_string(L::kMaxLogicalLine) + " characters",
                              statementLine);
    }
    return std::nullopt;
}

std::string blankImportLines(const std::string& s)
{
    // The rule of the former regex ^[ \t]*(import|from)[ \t]+[A-Za-z_][^\n]*$, by hand: std::regex
    // recurses per character and overflowed the stack on a 30,000-character import line.
    std::string out;
    out.reserve(s.size());
    std::size_t i = 0;
    while (i <= s.size()) {
        std::size_t end = s.find('\n', i);
        if (end == std::string::npos)
            end = s.size();
        std::size_t j = i;
        while (j < end && (s[j] == ' ' || s[j] == '\t'))
            ++j;
        bool blank = false;
        for (const char* kw : {"import", "from"}) {
            const std::size_t k = std::strlen(kw);
            if (end - j > k && s.compare(j, k, kw) == 0) {
                std::size_t m = j + k;
                const std::size_t ws = m;
                while (m < end && (s[m] == ' ' || s[m] == '\t'))
                    ++m;
                blank = m > ws && m < end && (std::isalpha(static_cast<unsigned char>(s[m])) || s[m] == '_');
                break;
            }
        }
        if (!blank)
            out.append(s, i, end - i);
        if (end == s.size())
            break;
        out += '\n';
        i = end + 1;
    }
    return out;
}

// ---- CUDA -------------------------------------------------------------------------------------

namespace {

// Characters that continue a word before a raw string prefix: `$` and the bytes of UTF-8
// sequences count, so `$R"x(` or `éR"x(` is never read as a raw string. NVRTC 13.0 rejects both
// characters (and then does read R"x( as one); a compiler that took them into identifiers would
// see an ordinary string. Reading an ordinary string where NVRTC reads a raw string only makes
// the check see more of the text as code, never less.
bool isWordChar(char c)
{
    return isIdentChar(c) || c == '$' || static_cast<unsigned char>(c) >= 0x80;
}

// A raw string delimiter character the check accepts: printable ASCII except space, ( ) \ and ".
// C++17 allows `"` and NVRTC 13.0 takes it; refusing it costs honest code nothing.
bool isDelimChar(char c)
{
    return c > ' ' && c < 0x7f && c != '(' && c != ')' && c != '\\' && c != '"';
}

bool isRawPrefix(const std::string& w)
{
    return w == "R" || w == "u8R" || w == "uR" || w == "UR" || w == "LR";
}

// Text after translation phases 1-3 as far as includes care: splices removed, comments replaced
// by one space, raw strings by "", with each character's original line and whether it belongs
// to a literal. Lines are kept as marks where they change (a toolkit header is read whole).
struct Cleaned
{
    std::string text;
    std::vector<char> literal;
    std::vector<std::pair<std::size_t, int>> marks; // (index in text, line from there on)
    void put(char c, int l, bool lit)
    {
        if (marks.empty() || marks.back().second != l)
            marks.emplace_back(text.size(), l);
        text += c;
        literal.push_back(lit);
    }
    // t[b, e) outside literals, its first character on line lb and its last on line le (a
    // splice inside moves the rest to later lines: then character by character, from t's lines)
    void putRun(const std::string& t, std::size_t b, std::size_t e, int lb, int le)
    {
        if (lb != le) {
            // rare: an identifier split by a splice; its later characters get its last line
            for (std::size_t k = b; k < e; ++k)
                put(t[k], k + 1 == e ? le : lb, false);
            return;
        }
        if (marks.empty() || marks.back().second != lb)
            marks.emplace_back(text.size(), lb);
        text.append(t, b, e - b);
        literal.resize(literal.size() + (e - b), 0);
    }
    int lineOf(std::size_t k) const
    {
        auto it = std::upper_bound(marks.begin(), marks.end(), std::make_pair(k, INT_MAX));
        return it == marks.begin() ? 1 : std::prev(it)->second;
    }
};

// Where the splice that starts at s[i] (a backslash) ends: the index of its newline, or npos when
// s[i] starts none. NVRTC (13.0, measured) splices a backslash, any number of carriage returns
// and a newline, inside raw strings too (`)x\` newline `"` ends R"x(...)). A backslash, spaces,
// tabs, \f or \v and a newline it does not splice; other compilers do, so `spliceAfterSpaces`
// reads those as splices too and checkCudaSource checks both readings when a source has one.
std::size_t spliceEnd(const std::string& s, std::size_t i, bool spliceAfterSpaces)
{
    std::size_t j = i + 1;
    while (j < s.size() &&
           (s[j] == '\r' || (spliceAfterSpaces && (s[j] == ' ' || s[j] == '\t' || s[j] == '\f' || s[j] == '\v'))))
        ++j;
    return j < s.size() && s[j] == '\n' ? j : std::string::npos;
}

std::string printable(const std::string& s, std::size_t from, std::size_t count)
{
    std::string out;
    for (std::size_t k = from; k < s.size() && k < from + count && s[k] != '\n'; ++k)
        out += (s[k] >= ' ' && s[k] < 0x7f) ? s[k] : '?';
    return out;
}

// `strict` (an answer): trigraphs, unterminated comments and raw strings, and raw strings whose
// delimiter NVRTC would not take are refused. Not strict (a toolkit header): read on as NVRTC does.
std::optional<SourceIssue> clean(const std::string& src, bool spliceAfterSpaces, bool strict, Cleaned& out)
{
    // Phase 2: splices. `spliced` holds, for each splice, the index in `t` after it and how many
    // characters of `src` the splices up to it removed.
    std::string t;
    std::vector<std::pair<std::size_t, std::size_t>> spliced;
    t.reserve(src.size());
    for (std::size_t i = 0; i < src.size();) {
        const std::size_t stop = src.find_first_of(strict ? "\\?" : "\\", i);
        if (stop == std::string::npos) {
            t.append(src, i, std::string::npos);
            break;
        }
        t.append(src, i, stop - i);
        i = stop;
        if (src[i] == '\\') {
            const std::size_t j = spliceEnd(src, i, spliceAfterSpaces);
            if (j != std::string::npos) {
                i = j + 1;
                spliced.emplace_back(t.size(), i - t.size());
                continue;
            }
        } else if (i + 2 < src.size() && src[i + 1] == '?' && (src[i + 2] == '=' || src[i + 2] == '/')) {
            const int line = 1 + int(std::count(src.begin(), src.begin() + std::ptrdiff_t(i), '\n'));
            return SourceIssue{"include_refused",
                               "the cuda block contains the trigraph ??" + std::string(1, src[i + 2]) +
                                   "; write the character itself",
                               line};
        }
        t += src[i++];
    }
    auto to = [&](std::size_t k) { // t index -> src index
        auto it = std::upper_bound(spliced.begin(), spliced.end(), std::make_pair(k, std::size_t(-1)));
        return k + (it == spliced.begin() ? 0 : std::prev(it)->second);
    };
    // The line of t[k], for k that never decrease: newlines of t before k plus splices before k.
    std::size_t lineK = 0, spliceIdx = 0;
    int lineAtK = 1;
    auto lineAt = [&](std::size_t k) {
        if (k < lineK) { // not expected; correct anyway
            lineK = 0;
            spliceIdx = 0;
            lineAtK = 1;
        }
        lineAtK += int(std::count(t.begin() + std::ptrdiff_t(lineK), t.begin() + std::ptrdiff_t(k), '\n'));
        lineK = k;
        while (spliceIdx < spliced.size() && spliced[spliceIdx].first <= k) {
            ++spliceIdx;
            ++lineAtK;
        }
        return lineAtK;
    };
    // Phase 3: comments and literals.
    const std::size_t n = t.size();
    out.text.reserve(n);
    out.literal.reserve(n);
    bool inNumber = false;
    for (std::size_t i = 0; i < n;) {
        const char c = t[i];
        if (c == '/' && i + 1 < n && t[i + 1] == '/') {
            const std::size_t b = i;
            i = std::min(n, t.find('\n', i));
            out.put(' ', lineAt(b), false);
            inNumber = false;
            continue;
        }
        if (c == '/' && i + 1 < n && t[i + 1] == '*') {
            std::size_t e = t.find("*/", i + 2);
            if (e == std::string::npos) {
                if (strict)
                    return SourceIssue{"include_refused", "the cuda block has an unterminated /* comment", lineAt(i)};
                e = n;
            }
            out.put(' ', lineAt(i), false);
            i = std::min(n, e + 2);
            inNumber = false;
            continue;
        }
        if (isWordChar(c) || (c == '.' && i + 1 < n && isDigit(t[i + 1]))) {
            // pp-numbers (1'000'000 has digit separators) and identifiers (raw string prefixes)
            const std::size_t b = i;
            const bool number = isDigit(c) || c == '.';
            if (!inNumber)
                inNumber = number;
            while (i < n) {
                if (isWordChar(t[i]) || (inNumber && t[i] == '.'))
                    ++i;
                else if (inNumber && t[i] == '\'' && i + 1 < n && isIdentChar(t[i + 1]))
                    ++i;
                else if (inNumber && (t[i] == '+' || t[i] == '-') &&
                         (t[i - 1] == 'e' || t[i - 1] == 'E' || t[i - 1] == 'p' || t[i - 1] == 'P'))
                    ++i;
                else
                    break;
            }
            const std::string word = i - b <= 3 && i < n && t[i] == '"' ? t.substr(b, i - b) : std::string();
            if (!inNumber && i < n && t[i] == '"' && isRawPrefix(word)) {
                // R"delim( ... )delim". The delimiter is read in the source as written: NVRTC
                // takes no splice inside it ("invalid character in raw string delimiter"), and
                // one it does not take ("not found within 16 characters -- raw string indicator
                // ignored") makes it read the quote as an ordinary string and the lines after as
                // code. The checker must never read a raw string where NVRTC reads code.
                const std::size_t o = to(i);
                std::size_t d = o + 1;
                while (d < src.size() && d - o - 1 < 16 && isDelimChar(src[d]))
                    ++d;
                const std::size_t len = d - o - 1;
                const bool valid = d < src.size() && src[d] == '(' && i + 1 + len < n &&
                                   t.compare(i + 1, len + 1, src, o + 1, len + 1) == 0;
                if (valid) {
                    const std::string close = ")" + src.substr(o + 1, len) + "\"";
                    std::size_t e = t.find(close, i + 2 + len);
                    if (e == std::string::npos) {
                        if (strict)
                            return SourceIssue{"include_refused",
                                               "the cuda block has an unterminated raw string literal", lineAt(b)};
                        e = n;
                    }
                    for (std::size_t k = b; k < i; ++k)
                        out.put(t[k], lineAt(k), false);
                    const int l = lineAt(i);
                    out.put('"', l, true);
                    out.put('"', l, true);
                    i = std::min(n, e + close.size());
                    inNumber = false;
                    continue;
                }
                if (strict)
                    return SourceIssue{
                        "include_refused",
                        "the cuda block has a raw string literal whose delimiter NVRTC does not accept (" + word +
                            "\"" + printable(src, o + 1, 20) +
                            "…): a delimiter has at most 16 characters and no space, quote, backslash, "
                            "parenthesis or control character; NVRTC would read the literal's text as code",
                        lineAt(b)};
                // not strict: as NVRTC, the prefix is an identifier and the quote opens an ordinary string
            }
            const int first = lineAt(b); // in this order: lineAt wants indices that never decrease
            out.putRun(t, b, i, first, lineAt(i - 1));
            inNumber = false;
            continue;
        }
        inNumber = false;
        if (c == '"' || c == '\'') {
            // an ordinary literal ends at its quote or, unterminated, at the end of the line
            out.put(c, lineAt(i), true);
            ++i;
            while (i < n && t[i] != '\n') {
                out.put(t[i], lineAt(i), true);
                if (t[i] == '\\' && i + 1 < n && t[i + 1] != '\n') {
                    out.put(t[i + 1], lineAt(i + 1), true);
                    i += 2;
                    continue;
                }
                if (t[i++] == c)
                    break;
            }
            continue;
        }
        out.put(c, lineAt(i), false);
        ++i;
    }
    return std::nullopt;
}

bool isRegularFile(const std::string& p)
{
    struct stat st
    {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool existsHere(const std::string& p)
{
    struct stat st
    {};
    return ::stat(p.c_str(), &st) == 0;
}

std::string realPath(const std::string& p)
{
    char buf[PATH_MAX];
    return ::realpath(p.c_str(), buf) ? std::string(buf) : std::string();
}

// Empty when `name` (from <name> or "name") may be included; otherwise why not.
std::string includeProblem(const std::string& name, bool quoted, const std::vector<std::string>& dirs)
{
    const std::string shown = quoted ? "\"" + name + "\"" : "<" + name + ">";
    const std::string outside = shown + " is outside the CUDA toolkit's include folders";
    if (name.empty() || name[0] == '/' || name.find('\\') != std::string::npos || name.find('\0') != std::string::npos)
        return outside;
    for (std::size_t b = 0; b <= name.size();) {
        std::size_t e = name.find('/', b);
        if (e == std::string::npos)
            e = name.size();
        if (name.compare(b, e - b, "..") == 0 && e - b == 2)
            return outside;
        b = e + 1;
    }
    if (quoted && existsHere(name))
        return shown + " would be read from the worker's working directory first; include toolkit headers as <" + name +
               ">";
    for (const std::string& d : dirs) {
        const std::string p = d + "/" + name;
        if (!isRegularFile(p))
            continue;
        const std::string real = realPath(p), root = realPath(d);
        if (!real.empty() && !root.empty() && real.compare(0, root.size() + 1, root + "/") == 0)
            return {};
    }
    return outside + " (headers available: those of the CUDA toolkit, e.g. <cuda_fp16.h>, <cuda_bf16.h>, <mma.h>)";
}

// Parses <name> or "name" at text[i...]; returns false when the operand has another form.
bool headerName(const std::string& t, std::size_t& i, std::string& name, bool& quoted)
{
    while (i < t.size() && (t[i] == ' ' || t[i] == '\t'))
        ++i;
    if (i >= t.size() || (t[i] != '<' && t[i] != '"'))
        return false;
    quoted = t[i] == '"';
    const char close = quoted ? '"' : '>';
    const std::size_t e = t.find_first_of(std::string(1, close) + "\n", i + 1);
    if (e == std::string::npos || t[e] != close)
        return false;
    name = t.substr(i + 1, e - i - 1);
    i = e + 1;
    return true;
}

// The directive on the cleaned line [b, e): true with its name's bounds [j, k) (empty for the
// null directive) when the line's first character outside literals is `#` or `%:`.
bool directiveOn(const Cleaned& c, std::size_t b, std::size_t e, std::size_t& at, std::size_t& j, std::size_t& k)
{
    const std::string& t = c.text;
    std::size_t i = b;
    while (i < e && (t[i] == ' ' || t[i] == '\t' || t[i] == '\f' || t[i] == '\v' || t[i] == '\r'))
        ++i;
    const bool hash = i < e && !c.literal[i] && t[i] == '#';
    const bool digraph = i + 1 < e && !c.literal[i] && t[i] == '%' && t[i + 1] == ':';
    if (!hash && !digraph)
        return false;
    at = i;
    j = i + (hash ? 1 : 2);
    while (j < e && (t[j] == ' ' || t[j] == '\t'))
        ++j;
    k = j;
    while (k < e && isIdentChar(t[k]))
        ++k;
    return true;
}

// Calls f(word, position) for each identifier in the cleaned range [b, e) outside literals
// (runs that start with a digit are pp-numbers, not identifiers).
template <class F>
void forEachWord(const Cleaned& c, std::size_t b, std::size_t e, F&& f)
{
    const std::string& t = c.text;
    for (std::size_t p = b; p < e;) {
        if (c.literal[p] || !isIdentChar(t[p])) {
            ++p;
            continue;
        }
        std::size_t q = p;
        while (q < e && isIdentChar(t[q]))
            ++q;
        if (!isDigit(t[p]))
            f(t.substr(p, q - p), p);
        p = q;
    }
}

// ---- what the toolkit's computed includes are made of ----

struct MacroDef
{
    std::vector<std::string> body;                   // identifiers of the replacement list, parameters aside
    std::vector<std::pair<std::string, bool>> left;  // identifiers left of ##: (word, is a parameter)
    std::vector<std::pair<std::string, bool>> right; // right of ##
};

struct ToolkitScan
{
    std::map<std::string, std::vector<MacroDef>> defs;
    std::vector<std::pair<std::string, std::string>> seeds; // identifier, site
    std::vector<std::string> sites;
    std::size_t files = 0;
};

void scanToolkitFile(const std::string& text, const std::string& shownPath, ToolkitScan& scan)
{
    Cleaned c;
    (void)clean(text, false, false, c);
    const std::string& t = c.text;
    const std::size_t n = t.size();
    for (std::size_t b = 0; b < n;) {
        std::size_t e = t.find('\n', b);
        if (e == std::string::npos)
            e = n;
        std::size_t at = 0, j = 0, k = 0;
        if (directiveOn(c, b, e, at, j, k)) {
            const std::string name = t.substr(j, k - j);
            if (name == "include" || name == "include_next" || name == "import") {
                std::size_t m = k;
                while (m < e && (t[m] == ' ' || t[m] == '\t'))
                    ++m;
                if (m < e && t[m] != '<' && t[m] != '"') {
                    std::size_t last = e;
                    while (last > m && std::isspace(static_cast<unsigned char>(t[last - 1])))
                        --last;
                    const std::string site =
                        shownPath + ":" + std::to_string(c.lineOf(at)) + ": #" + name + " " + t.substr(m, last - m);
                    scan.sites.push_back(site);
                    forEachWord(c, m, e, [&](const std::string& w, std::size_t) { scan.seeds.emplace_back(w, site); });
                }
            } else if (name == "define") {
                std::size_t m = k;
                while (m < e && (t[m] == ' ' || t[m] == '\t'))
                    ++m;
                std::size_t q = m;
                while (q < e && isIdentChar(t[q]))
                    ++q;
                if (q > m && !isDigit(t[m])) {
                    const std::string macro = t.substr(m, q - m);
                    std::set<std::string> params;
                    if (q < e && t[q] == '(') {
                        const std::size_t close = t.find(')', q);
                        const std::size_t pe = close == std::string::npos || close > e ? e : close;
                        forEachWord(c, q + 1, pe, [&](const std::string& w, std::size_t) { params.insert(w); });
                        q = pe < e ? pe + 1 : e;
                    }
                    MacroDef def;
                    forEachWord(c, q, e, [&](const std::string& w, std::size_t) {
                        if (!params.count(w))
                            def.body.push_back(w);
                    });
                    // token pasting: ## or %:%:
                    for (std::size_t p = q; p + 1 < e; ++p) {
                        std::size_t len = 0;
                        if (!c.literal[p] && t[p] == '#' && t[p + 1] == '#')
                            len = 2;
                        else if (!c.literal[p] && p + 3 < e && t.compare(p, 4, "%:%:") == 0)
                            len = 4;
                        if (!len)
                            continue;
                        std::size_t l = p;
                        while (l > q && (t[l - 1] == ' ' || t[l - 1] == '\t'))
                            --l;
                        std::size_t ls = l;
                        while (ls > q && isIdentChar(t[ls - 1]))
                            --ls;
                        if (ls < l && !isDigit(t[ls])) {
                            const std::string w = t.substr(ls, l - ls);
                            def.left.emplace_back(w, params.count(w) > 0);
                        }
                        std::size_t r = p + len;
                        while (r < e && (t[r] == ' ' || t[r] == '\t'))
                            ++r;
                        std::size_t re = r;
                        while (re < e && isIdentChar(t[re]))
                            ++re;
                        if (re > r) {
                            const std::string w = t.substr(r, re - r);
                            def.right.emplace_back(w, params.count(w) > 0);
                        }
                        p += len - 1;
                    }
                    scan.defs[macro].push_back(std::move(def));
                }
            }
        }
        b = e + 1;
    }
}

void walkToolkit(const std::string& dir, const std::string& shown, int depth, std::set<std::pair<dev_t, ino_t>>& seen,
                 ToolkitScan& scan)
{
    if (depth > 64)
        return;
    DIR* d = ::opendir(dir.c_str());
    if (!d)
        return;
    std::vector<std::string> names;
    while (const dirent* ent = ::readdir(d)) {
        const std::string name = ent->d_name;
        if (name != "." && name != "..")
            names.push_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
        const std::string path = dir + "/" + name;
        const std::string rel = shown.empty() ? name : shown + "/" + name;
        struct stat st
        {};
        if (::stat(path.c_str(), &st) != 0 || !seen.insert({st.st_dev, st.st_ino}).second)
            continue;
        if (S_ISDIR(st.st_mode)) {
            walkToolkit(path, rel, depth + 1, seen, scan);
        } else if (S_ISREG(st.st_mode) && st.st_size <= (64 << 20)) {
            std::string text(std::size_t(st.st_size), '\0');
            std::FILE* f = std::fopen(path.c_str(), "rb");
            if (!f)
                continue;
            text.resize(std::fread(&text[0], 1, text.size(), f));
            std::fclose(f);
            ++scan.files;
            if (text.find("include") != std::string::npos || text.find("define") != std::string::npos)
                scanToolkitFile(text, rel, scan);
        }
    }
}

std::shared_ptr<ToolkitIncludeMacros> computeToolkitIncludeMacros(const std::vector<std::string>& dirs)
{
    ToolkitScan scan;
    std::set<std::pair<dev_t, ino_t>> seen;
    for (const std::string& d : dirs) {
        struct stat st
        {};
        if (::stat(d.c_str(), &st) == 0 && seen.insert({st.st_dev, st.st_ino}).second)
            walkToolkit(d, "", 0, seen, scan);
    }
    auto out = std::make_shared<ToolkitIncludeMacros>();
    out->dirs = dirs;
    out->files = scan.files;
    out->sites = scan.sites;
    // The closure: every identifier of a computed include's operand, then every identifier of the
    // replacement list of any toolkit definition of a name in the set (all definitions, whatever
    // #if they sit under: the answer can choose the branch).
    std::vector<std::string> work;
    for (const auto& [w, site] : scan.seeds)
        if (out->steering.emplace(w, site).second)
            work.push_back(w);
    while (!work.empty()) {
        const std::string name = work.back();
        work.pop_back();
        const auto it = scan.defs.find(name);
        if (it == scan.defs.end())
            continue;
        const std::string site = out->steering[name];
        for (const MacroDef& def : it->second) {
            for (const std::string& w : def.body)
                if (out->steering.emplace(w, site).second)
                    work.push_back(w);
            for (const auto& [w, param] : def.left) {
                if (param)
                    out->pasteAny = true;
                else
                    out->pastePrefixes.insert(w);
            }
            for (const auto& [w, param] : def.right) {
                if (param)
                    out->pasteAny = true;
                else
                    out->pasteSuffixes.insert(w);
            }
        }
    }
    // Macros that expand to __has_include, directly or through others.
    std::map<std::string, std::vector<std::string>> usedBy;
    for (const auto& [macro, list] : scan.defs)
        for (const MacroDef& def : list)
            for (const std::string& w : def.body)
                usedBy[w].push_back(macro);
    work = {"__has_include", "__has_include_next"};
    while (!work.empty()) {
        const std::string name = work.back();
        work.pop_back();
        for (const std::string& m : usedBy[name])
            if (out->fileTests.insert(m).second)
                work.push_back(m);
    }
    return out;
}

} // namespace

std::string ToolkitIncludeMacros::whyRefused(const std::string& name) const
{
    if (const auto it = steering.find(name); it != steering.end())
        return "the CUDA toolkit builds #include file names from " + name + " (" + it->second +
               "), so defining it could make NVRTC read any file";
    for (const std::string& p : pastePrefixes)
        if (name.compare(0, p.size(), p) == 0)
            return "the CUDA toolkit pastes #include file names from " + p + "## (a computed include)";
    for (const std::string& s : pasteSuffixes)
        if (name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0)
            return "the CUDA toolkit pastes #include file names from ##" + s + " (a computed include)";
    if (pasteAny)
        for (const auto& [w, site] : steering)
            if (name.compare(0, w.size(), w) == 0)
                return "the CUDA toolkit pastes #include file names from macro arguments (" + site + ")";
    return {};
}

const ToolkitIncludeMacros& toolkitIncludeMacros(const std::vector<std::string>& includeDirs)
{
    static std::mutex mutex;
    static std::map<std::vector<std::string>, std::shared_ptr<ToolkitIncludeMacros>> cache;
    std::lock_guard<std::mutex> lock(mutex);
    auto& slot = cache[includeDirs];
    if (!slot)
        slot = computeToolkitIncludeMacros(includeDirs);
    return *slot;
}

namespace {

std::optional<SourceIssue> scanCleaned(const Cleaned& c, const std::vector<std::string>& dirs,
                                       const ToolkitIncludeMacros& toolkit)
{
    const std::string& t = c.text;
    const std::size_t n = t.size();
    auto issue = [&](const std::string& msg, std::size_t at) {
        return SourceIssue{"include_refused", msg, c.lineOf(std::min(at, n == 0 ? 0 : n - 1))};
    };
    for (std::size_t b = 0; b < n;) {
        std::size_t e = t.find('\n', b);
        if (e == std::string::npos)
            e = n;
        std::size_t i = 0, j = 0, k = 0;
        if (directiveOn(c, b, e, i, j, k)) {
            const std::string name = t.substr(j, k - j);
            static const char* plain[] = {"define",   "undef", "if",    "ifdef", "ifndef",  "elif",  "elifdef",
                                          "elifndef", "else",  "endif", "error", "warning", "pragma"};
            bool known = name.empty() && (k >= e || t.find_first_not_of(" \t\r", k) >= e); // null directive
            for (const char* p : plain)
                known = known || name == p;
            if (name == "include") {
                std::string header;
                bool quoted = false;
                std::size_t m = k;
                if (!headerName(t, m, header, quoted) || t.find_first_not_of(" \t\r", m) < e)
                    return issue("#include must name a header as <name> or \"name\"; computed includes "
                                 "(a macro, or anything else after #include) are refused",
                                 i);
                if (const std::string why = includeProblem(header, quoted, dirs); !why.empty())
                    return issue("#include " + why, i);
            } else if (name == "define" || name == "undef") {
                std::size_t m = k;
                while (m < e && (t[m] == ' ' || t[m] == '\t'))
                    ++m;
                std::size_t q = m;
                while (q < e && isIdentChar(t[q]))
                    ++q;
                const std::string macro = t.substr(m, q - m);
                if (const std::string why = toolkit.whyRefused(macro); !macro.empty() && !why.empty())
                    return issue("#" + name + " " + macro + " is refused: " + why + "; use another name", i);
            } else if (name == "pragma" && t.substr(k, e - k).find("include") != std::string::npos) {
                return issue("#pragma" + t.substr(k, e - k) + " is refused (it concerns includes)", i);
            } else if (!known) {
                return issue("the directive #" + (name.empty() ? t.substr(j, std::min<std::size_t>(e - j, 20)) : name) +
                                 " is refused in the cuda block (only #include of toolkit headers, #define, #if…, "
                                 "#pragma, #error, #warning)",
                             i);
            }
        }
        // Operators that reach the file system from any line.
        int lineMentionsInclude = -1;
        std::optional<SourceIssue> bad;
        forEachWord(c, b, e, [&](const std::string& word, std::size_t p) {
            if (bad)
                return;
            const std::size_t q = p + word.size();
            if (word == "__has_include" || word == "__has_include_next") {
                std::size_t m = q;
                while (m < e && (t[m] == ' ' || t[m] == '\t'))
                    ++m;
                std::string header;
                bool quoted = false;
                if (m >= e || t[m] != '(' || !headerName(t, ++m, header, quoted) || word != "__has_include")
                    bad = issue(word + " must test a header as (<name>) or (\"name\")", p);
                else if (const std::string why = includeProblem(header, quoted, dirs); !why.empty())
                    bad = issue("__has_include: " + why, p);
            } else if (word == "__has_embed") {
                bad = issue(word + " is refused in the cuda block", p);
            } else if (word == "_Pragma") {
                if (lineMentionsInclude < 0) { // once per line, so the scan stays linear
                    static const std::string inc = "include";
                    const auto end = t.begin() + std::ptrdiff_t(e);
                    lineMentionsInclude =
                        std::search(t.begin() + std::ptrdiff_t(b), end, inc.begin(), inc.end()) != end;
                }
                if (lineMentionsInclude)
                    bad = issue(word + " is refused in the cuda block when it concerns includes", p);
            } else if (toolkit.fileTests.count(word)) {
                bad = issue(word + " is refused in the cuda block: it is the toolkit's __has_include, which may only "
                                   "test a toolkit header written as __has_include(<name>)",
                            p);
            }
        });
        if (bad)
            return bad;
        b = e + 1;
    }
    return std::nullopt;
}

} // namespace

std::optional<SourceIssue> checkCudaSource(const std::string& cuda, const std::vector<std::string>& includeDirs)
{
    // Backslash, blanks, newline: whether that splices depends on the compiler (NVRTC: not when a
    // space, tab, \f or \v is among them), so the source must pass read both ways.
    bool ambiguous = false;
    for (std::size_t i = 0; i < cuda.size() && !ambiguous; ++i)
        if (cuda[i] == '\\')
            ambiguous = spliceEnd(cuda, i, true) != spliceEnd(cuda, i, false);
    const ToolkitIncludeMacros& toolkit = toolkitIncludeMacros(includeDirs);
    for (bool spaces : {false, true}) {
        if (spaces && !ambiguous)
            break;
        Cleaned c;
        if (auto bad = clean(cuda, spaces, true, c))
            return bad;
        if (auto bad = scanCleaned(c, includeDirs, toolkit))
            return bad;
    }
    return std::nullopt;
}

} // namespace kwb
