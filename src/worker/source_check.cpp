#include "source_check.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace kwb {
namespace {

bool isIdentChar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }

SourceIssue limitIssue(const std::string& what, int line)
{
    return {"host_code_limit",
            "host code " + what + " (python block line " + std::to_string(line) +
                "); write it more simply (the limits are in docs/sandbox.md)",
            line};
}

}  // namespace

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
    bool lineStart = true;  // at the start of a physical line that begins a statement
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
            i += s[i + 1] == '\n' ? 2 : 3;  // explicit line joining: the statement goes on
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
                        break;  // unterminated: the parser reports it
                    ++line;
                    ++i;
                } else {
                    ++i;
                }
            }
            if (statementTooLong())
                return limitIssue("has a statement longer than " + std::to_string(L::kMaxLogicalLine) + " characters", statementLine);
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
            ++ops;  // calls and subscripts chain like operators: f()()(), x[0][0]
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
                ++ops;  // each character: `----x` nests as deeply as `- - - - x`
            ++i;
        } else {
            ++i;
        }
        if (ops > L::kMaxOperators)
            return limitIssue("has a statement with more than " + std::to_string(L::kMaxOperators) + " operators", statementLine);
        if (statementTooLong())
            return limitIssue("has a statement longer than " + std::to_string(L::kMaxLogicalLine) + " characters", statementLine);
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

// Text after translation phases 1-3 as far as includes care: splices removed, comments replaced
// by one space, raw strings by "", with each character's original line and whether it belongs
// to a literal.
struct Cleaned {
    std::string text;
    std::vector<int> line;
    std::vector<bool> literal;
    void put(char c, int l, bool lit)
    {
        text += c;
        line.push_back(l);
        literal.push_back(lit);
    }
};

std::optional<SourceIssue> clean(const std::string& src, bool spliceAfterSpaces, Cleaned& out)
{
    // Phase 2: backslash-newline splices. Some compilers also splice when spaces sit between the
    // backslash and the newline; the caller checks both readings.
    std::string t;
    std::vector<int> tl;
    t.reserve(src.size());
    tl.reserve(src.size());
    int line = 1;
    for (std::size_t i = 0; i < src.size(); ++i) {
        if (src[i] == '\\') {
            std::size_t j = i + 1;
            if (spliceAfterSpaces)
                while (j < src.size() && (src[j] == ' ' || src[j] == '\t'))
                    ++j;
            if (j < src.size() && src[j] == '\r')
                ++j;
            if (j < src.size() && src[j] == '\n') {
                ++line;
                i = j;
                continue;
            }
        }
        if (src[i] == '?' && i + 2 < src.size() && src[i + 1] == '?' && (src[i + 2] == '=' || src[i + 2] == '/'))
            return SourceIssue{"include_refused", "the cuda block contains the trigraph ??" + std::string(1, src[i + 2]) +
                                                      "; write the character itself", line};
        t += src[i];
        tl.push_back(line);
        if (src[i] == '\n')
            ++line;
    }
    // Phase 3: comments and literals.
    const std::size_t n = t.size();
    bool inNumber = false;
    for (std::size_t i = 0; i < n;) {
        const char c = t[i];
        if (c == '/' && i + 1 < n && t[i + 1] == '/') {
            while (i < n && t[i] != '\n')
                ++i;
            out.put(' ', tl[i - 1], false);
            inNumber = false;
            continue;
        }
        if (c == '/' && i + 1 < n && t[i + 1] == '*') {
            const std::size_t e = t.find("*/", i + 2);
            if (e == std::string::npos)
                return SourceIssue{"include_refused", "the cuda block has an unterminated /* comment", tl[i]};
            out.put(' ', tl[i], false);
            i = e + 2;
            inNumber = false;
            continue;
        }
        if (isIdentChar(c) || (c == '.' && i + 1 < n && isDigit(t[i + 1]))) {
            // pp-numbers (1'000'000 has digit separators) and identifiers (raw string prefixes)
            const std::size_t b = i;
            const bool number = isDigit(c) || c == '.';
            if (!inNumber)
                inNumber = number;
            while (i < n) {
                if (isIdentChar(t[i]) || (inNumber && t[i] == '.'))
                    ++i;
                else if (inNumber && t[i] == '\'' && i + 1 < n && isIdentChar(t[i + 1]))
                    ++i;
                else if (inNumber && (t[i] == '+' || t[i] == '-') && std::strchr("eEpP", t[i - 1]))
                    ++i;
                else
                    break;
            }
            const std::string word = t.substr(b, i - b);
            if (!inNumber && i < n && t[i] == '"' && (word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR")) {
                // raw string: R"delim( ... )delim"
                std::size_t d = i + 1;
                while (d < n && d - i - 1 <= 16 && t[d] != '(' && !std::strchr(" \t\n\\)\"", t[d]))
                    ++d;
                if (d < n && t[d] == '(') {
                    const std::string close = ")" + t.substr(i + 1, d - i - 1) + "\"";
                    const std::size_t e = t.find(close, d + 1);
                    if (e == std::string::npos)
                        return SourceIssue{"include_refused", "the cuda block has an unterminated raw string literal", tl[b]};
                    for (std::size_t k = b; k < i; ++k)
                        out.put(t[k], tl[k], false);
                    out.put('"', tl[i], true);
                    out.put('"', tl[i], true);
                    i = e + close.size();
                    inNumber = false;
                    continue;
                }
            }
            for (std::size_t k = b; k < i; ++k)
                out.put(t[k], tl[k], false);
            inNumber = false;
            continue;
        }
        inNumber = false;
        if (c == '"' || c == '\'') {
            // an ordinary literal ends at its quote or, unterminated, at the end of the line
            out.put(c, tl[i], true);
            ++i;
            while (i < n && t[i] != '\n') {
                out.put(t[i], tl[i], true);
                if (t[i] == '\\' && i + 1 < n && t[i + 1] != '\n') {
                    out.put(t[i + 1], tl[i + 1], true);
                    i += 2;
                    continue;
                }
                if (t[i++] == c)
                    break;
            }
            continue;
        }
        out.put(c, tl[i], false);
        ++i;
    }
    return std::nullopt;
}

bool isRegularFile(const std::string& p)
{
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool existsHere(const std::string& p)
{
    struct stat st {};
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
        return shown + " would be read from the worker's working directory first; include toolkit headers as <" +
               name + ">";
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

std::optional<SourceIssue> scanCleaned(const Cleaned& c, const std::vector<std::string>& dirs)
{
    const std::string& t = c.text;
    const std::size_t n = t.size();
    auto issue = [&](const std::string& msg, std::size_t at) {
        return SourceIssue{"include_refused", msg, c.line.empty() ? 1 : c.line[std::min(at, n - 1)]};
    };
    for (std::size_t b = 0; b < n;) {
        std::size_t e = t.find('\n', b);
        if (e == std::string::npos)
            e = n;
        std::size_t i = b;
        while (i < e && (t[i] == ' ' || t[i] == '\t' || t[i] == '\f' || t[i] == '\v' || t[i] == '\r'))
            ++i;
        const bool hash = i < e && !c.literal[i] && t[i] == '#';
        const bool digraph = i + 1 < e && !c.literal[i] && t[i] == '%' && t[i + 1] == ':';
        if (hash || digraph) {
            std::size_t j = i + (hash ? 1 : 2);
            while (j < e && (t[j] == ' ' || t[j] == '\t'))
                ++j;
            std::size_t k = j;
            while (k < e && isIdentChar(t[k]))
                ++k;
            const std::string name = t.substr(j, k - j);
            static const char* plain[] = {"define", "undef", "if",     "ifdef", "ifndef",  "elif",    "elifdef",
                                          "elifndef", "else", "endif", "error", "warning", "pragma"};
            bool known = name.empty() && (k >= e || t.find_first_not_of(" \t\r", k) >= e);  // null directive
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
        for (std::size_t p = b; p < e;) {
            if (c.literal[p] || !isIdentChar(t[p]) || (p > 0 && isIdentChar(t[p - 1]))) {
                ++p;
                continue;
            }
            std::size_t q = p;
            while (q < e && isIdentChar(t[q]))
                ++q;
            const std::string word = t.substr(p, q - p);
            if (word == "__has_include" || word == "__has_include_next") {
                std::size_t m = q;
                while (m < e && (t[m] == ' ' || t[m] == '\t'))
                    ++m;
                std::string header;
                bool quoted = false;
                if (m >= e || t[m] != '(' || !headerName(t, ++m, header, quoted) || word != "__has_include")
                    return issue(word + " must test a header as (<name>) or (\"name\")", p);
                if (const std::string why = includeProblem(header, quoted, dirs); !why.empty())
                    return issue("__has_include: " + why, p);
            } else if (word == "__has_embed") {
                return issue(word + " is refused in the cuda block", p);
            } else if (word == "_Pragma") {
                if (lineMentionsInclude < 0) {  // once per line, so the scan stays linear
                    static const std::string inc = "include";
                    const auto end = t.begin() + std::ptrdiff_t(e);
                    lineMentionsInclude = std::search(t.begin() + std::ptrdiff_t(b), end, inc.begin(), inc.end()) != end;
                }
                if (lineMentionsInclude)
                    return issue(word + " is refused in the cuda block when it concerns includes", p);
            }
            p = q;
        }
        b = e + 1;
    }
    return std::nullopt;
}

}  // namespace

std::optional<SourceIssue> checkCudaSource(const std::string& cuda, const std::vector<std::string>& includeDirs)
{
    // Backslash, spaces, newline: whether that splices depends on the compiler, so the source
    // must pass read both ways.
    bool ambiguous = false;
    for (std::size_t i = 0; i < cuda.size() && !ambiguous; ++i) {
        if (cuda[i] != '\\')
            continue;
        std::size_t j = i + 1;
        while (j < cuda.size() && (cuda[j] == ' ' || cuda[j] == '\t'))
            ++j;
        ambiguous = j > i + 1 && j < cuda.size() && (cuda[j] == '\n' || cuda[j] == '\r');
    }
    for (bool spaces : {false, true}) {
        if (spaces && !ambiguous)
            break;
        Cleaned c;
        if (auto bad = clean(cuda, spaces, c))
            return bad;
        if (auto bad = scanCleaned(c, includeDirs))
            return bad;
    }
    return std::nullopt;
}

}  // namespace kwb
