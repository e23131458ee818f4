//! What the C library's functions write through their pointer arguments, and how much: the
//! table of writers, and the sizes `printf` and `scanf` formats imply.

use super::super::llvm;
use llvm_sys::core::*;
use super::places::{gep_byte_offset, is_gep};

/// How a function of the C library writes through a pointer argument (arguments by position).
#[derive(Clone, Copy)]
pub(super) enum LibraryWrite {
    /// At most `len` bytes at `dest`, `len` being argument `n` (times argument `times`).
    Bounded { dest: u32, n: u32, times: Option<u32> },
    /// A fixed number of bytes at `dest` (`strtol`'s end pointer).
    Fixed { dest: u32, bytes: u64 },
    /// At most argument `n` wide characters (4 bytes each) at `dest`.
    Wide { dest: u32, n: u32 },
    /// A copy of the string at `src`, its NUL included (`strcpy`): bounded when that string is
    /// a constant.
    String { dest: u32, src: u32 },
    /// As much as its other inputs say (`strcat`, `gets`).
    Unbounded { dest: u32 },
    /// A `sprintf`: as much as its format (argument `format`) prints at most, when that is a
    /// constant of bounded conversions.
    Print { dest: u32, format: u32 },
    /// A `scanf`: each conversion of the format (argument `format`) writes through one of
    /// the arguments after it.
    Scan { format: u32 },
    /// A `printf`'s `%n` conversions: each writes the count printed so far through one of the
    /// arguments after the format (argument `format`).
    Count { format: u32 },
}

/// Every way a function of the C library writes through its pointer arguments: the table's
/// entry, and a `printf`'s `%n` conversions.
/// The name of a fortified variant's plain function (`__memcpy_chk`: `memcpy`).
pub(super) fn unfortified(name: &str) -> &str {
    name.strip_prefix("__").and_then(|n| n.strip_suffix("_chk")).unwrap_or(name)
}

pub(super) fn library_writes(name: &str) -> Vec<LibraryWrite> {
    let mut writes: Vec<LibraryWrite> = library_write(name).into_iter().collect();
    // The fortified variants take a flag (and, for the buffer ones, a length and an object
    // size) before the format. The `v` variants' arguments are in a `va_list`: not followed.
    let format = match name {
        "printf" | "warn" | "warnx" => Some(0),
        "syslog" | "err" | "errx" => Some(1),
        "error" => Some(2),
        "fprintf" | "dprintf" | "sprintf" | "asprintf" | "__printf_chk" => Some(1),
        "snprintf" | "__fprintf_chk" | "__dprintf_chk" | "__asprintf_chk" => Some(2),
        "__sprintf_chk" => Some(3),
        "__snprintf_chk" => Some(4),
        _ => None,
    };
    writes.extend(format.map(|format| LibraryWrite::Count { format }));
    // Second pointers the table's entry does not name (the fortified variants' arguments
    // where they differ: `__recvfrom_chk` takes the buffer's size before the flags).
    use LibraryWrite::*;
    if name == "__recvfrom_chk" {
        writes.extend([Unbounded { dest: 5 }, Fixed { dest: 6, bytes: 4 }]);
    }
    let fortified = name.starts_with("__") && name.ends_with("_chk");
    let name = unfortified(name);
    match name {
        // The obsolete `struct timezone`.
        "gettimeofday" => writes.push(Fixed { dest: 1, bytes: 8 }),
        // The sender's address, as long as `*addrlen` says, and `*addrlen`.
        "recvfrom" if !fortified => writes.extend([Unbounded { dest: 4 }, Fixed { dest: 5, bytes: 4 }]),
        // The `mbstate_t`.
        "mbrtowc" | "mbrlen" | "mbsrtowcs" | "mbsnrtowcs" | "wcrtomb" | "wcsrtombs" | "wcsnrtombs" | "mbrtoc16" | "mbrtoc32" | "c16rtomb" | "c32rtomb" => {
            let state = match name {
                "mbrtowc" | "mbrtoc16" | "mbrtoc32" => 3,
                "mbrlen" | "wcrtomb" | "c16rtomb" | "c32rtomb" => 2,
                "mbsrtowcs" | "wcsrtombs" => 3,
                _ => 4,
            };
            writes.push(Fixed { dest: state, bytes: 8 });
            // The character or characters, where the table's entry has none.
            writes.extend(match name {
                "mbrtoc32" => Some(Fixed { dest: 0, bytes: 4 }),
                "mbrtoc16" => Some(Fixed { dest: 0, bytes: 2 }),
                "c16rtomb" | "c32rtomb" => Some(Fixed { dest: 0, bytes: 16 }),
                "mbsnrtowcs" => Some(Wide { dest: 0, n: 3 }),
                "wcsnrtombs" => Some(Bounded { dest: 0, n: 3, times: None }),
                _ => None,
            });
        }
        _ => {}
    }
    writes
}

/// The functions of the C library that write through a pointer argument, and how. Not listed:
/// everything else, whose writes are not checked (a stubbed external writes nothing natively).
pub(super) fn library_write(name: &str) -> Option<LibraryWrite> {
    use LibraryWrite::*;
    // glibc's headers name the C99 `scanf`s `__isoc99_sscanf` (`__isoc23_` for C23).
    let name = name.strip_prefix("__isoc99_").or_else(|| name.strip_prefix("__isoc23_")).unwrap_or(name);
    // The fortified variants (`__memcpy_chk`): their object-size argument comes last, or
    // before the format.
    match name {
        "__sprintf_chk" | "__vsprintf_chk" => return Some(Print { dest: 0, format: 3 }),
        "__snprintf_chk" | "__vsnprintf_chk" => return Some(Bounded { dest: 0, n: 1, times: None }),
        "__fgets_chk" => return Some(Bounded { dest: 0, n: 2, times: None }),
        "__read_chk" => return Some(Bounded { dest: 1, n: 2, times: None }),
        _ => {}
    }
    let name = unfortified(name);
    Some(match name {
        "memccpy" => Bounded { dest: 0, n: 3, times: None },
        "swab" => Bounded { dest: 1, n: 2, times: None },
        "strxfrm" => Bounded { dest: 0, n: 2, times: None },
        "strerror_r" | "ttyname_r" => Bounded { dest: 1, n: 2, times: None },
        "getlogin_r" => Bounded { dest: 0, n: 1, times: None },
        "qsort" => Bounded { dest: 0, n: 1, times: Some(2) },
        // `wchar_t` is 4 bytes here.
        "mbstowcs" | "mbsrtowcs" | "wcsncpy" | "wmemcpy" | "wmemmove" | "wmemset" => Wide { dest: 0, n: 2 },
        "wcscpy" | "wcscat" | "wcsncat" => Unbounded { dest: 0 },
        "time" => Fixed { dest: 0, bytes: 8 },
        "pipe" => Fixed { dest: 0, bytes: 8 },
        "gettimeofday" => Fixed { dest: 0, bytes: 16 },
        "localtime_r" | "gmtime_r" => Fixed { dest: 1, bytes: 56 },
        // The 26 bytes of "Wed Jun 30 21:49:08 1993\n".
        "ctime_r" | "asctime_r" => Fixed { dest: 1, bytes: 26 },
        "clock_gettime" | "clock_getres" => Fixed { dest: 1, bytes: 16 },
        "getrlimit" => Fixed { dest: 1, bytes: 16 },
        "times" => Fixed { dest: 0, bytes: 32 },
        "uname" => Fixed { dest: 0, bytes: 390 },
        "sigemptyset" | "sigfillset" | "sigaddset" | "sigdelset" => Fixed { dest: 0, bytes: 128 },
        "pthread_create" | "asprintf" | "vasprintf" => Fixed { dest: 0, bytes: 8 },
        "mbrtowc" | "mbtowc" => Fixed { dest: 0, bytes: 4 },
        "strftime" | "getentropy" | "getrandom" => Bounded { dest: 0, n: 1, times: None },
        "wcstombs" | "wcsrtombs" => Bounded { dest: 0, n: 2, times: None },
        "confstr" | "recvfrom" => Bounded { dest: 1, n: 2, times: None },
        "inet_ntop" => Bounded { dest: 2, n: 3, times: None },
        "fgetws" | "wcsftime" => Wide { dest: 0, n: 1 },
        // `MB_LEN_MAX` bytes at most.
        "wcrtomb" | "wctomb" => Fixed { dest: 0, bytes: 16 },
        "stat" | "fstat" | "lstat" => Fixed { dest: 1, bytes: 144 },
        "frexp" | "frexpf" | "remquo" => Fixed { dest: if name == "remquo" { 2 } else { 1 }, bytes: 4 },
        "modf" => Fixed { dest: 1, bytes: 8 },
        "nanosleep" => Fixed { dest: 1, bytes: 16 },
        // `struct tm`, normalised in place.
        "mktime" | "timegm" | "timelocal" => Fixed { dest: 0, bytes: 56 },
        "wait" => Fixed { dest: 0, bytes: 4 },
        // A NUL at each delimiter, wherever the string's end is (an unterminated array: past it).
        "strtok" => Unbounded { dest: 0 },
        // `jmp_buf`, `sigjmp_buf`: 200 bytes.
        "setjmp" | "_setjmp" | "__setjmp" | "sigsetjmp" | "__sigsetjmp" => Fixed { dest: 0, bytes: 200 },
        "memset" | "memcpy" | "memmove" | "mempcpy" | "strncpy" | "stpncpy" => Bounded { dest: 0, n: 2, times: None },
        "bzero" | "explicit_bzero" | "snprintf" | "vsnprintf" | "fgets" | "getcwd" | "gethostname" => Bounded { dest: 0, n: 1, times: None },
        "read" | "pread" | "recv" | "readlink" => Bounded { dest: 1, n: 2, times: None },
        "fread" => Bounded { dest: 0, n: 1, times: Some(2) },
        "strtol" | "strtoul" | "strtoll" | "strtoull" | "strtod" | "strtof" | "strtold" | "strtoimax" | "strtoumax" => Fixed { dest: 1, bytes: 8 },
        "strcpy" | "stpcpy" => String { dest: 0, src: 1 },
        "sprintf" | "vsprintf" => Print { dest: 0, format: 1 },
        "strcat" | "strncat" | "gets" => Unbounded { dest: 0 },
        "realpath" => Unbounded { dest: 1 },
        "scanf" | "vscanf" => Scan { format: 0 },
        "sscanf" | "fscanf" | "vsscanf" | "vfscanf" => Scan { format: 1 },
        _ => return None,
    })
}

/// The argument a C library function returns a pointer into (or null): `strchr`'s string,
/// `strcpy`'s destination.
/// Functions of the C library that read through the pointers they are given and write none
/// of them (or only memory they allocate themselves). Any other function the C library defines
/// and the table ([`library_write`]) does not list may write past an object it is given: such a
/// call is a clobber site (see `call_checks_of`).
pub(super) fn reads_only(name: &str) -> bool {
    let name = name.strip_prefix("__isoc99_").or_else(|| name.strip_prefix("__isoc23_")).unwrap_or(name);
    matches!(
        name,
        "strlen" | "strnlen" | "strcmp" | "strncmp" | "strcasecmp" | "strncasecmp" | "strcoll" | "memcmp" | "bcmp" | "memchr" | "memrchr" | "rawmemchr"
            | "strchr" | "strrchr" | "strchrnul" | "strstr" | "strcasestr" | "strspn" | "strcspn" | "strpbrk" | "index" | "rindex" | "memmem"
            | "wcslen" | "wcsnlen" | "wcscmp" | "wcsncmp" | "wcschr" | "wcsrchr" | "wcsstr" | "wmemchr" | "wmemcmp" | "wcsspn" | "wcscspn" | "wcscoll"
            | "atoi" | "atol" | "atoll" | "atof" | "strdup" | "strndup" | "wcsdup" | "puts" | "fputs" | "fputs_unlocked" | "fputc" | "putc" | "putchar"
            | "fwrite" | "fwrite_unlocked" | "write" | "pwrite" | "send" | "sendto" | "perror" | "free" | "malloc" | "calloc" | "realloc" | "aligned_alloc"
            | "fopen" | "freopen" | "fdopen" | "open" | "openat" | "creat" | "access" | "unlink" | "remove" | "rename" | "mkdir" | "rmdir" | "chdir"
            | "opendir" | "chmod" | "chown" | "truncate" | "execv" | "execve" | "execvp" | "execl" | "execlp" | "system" | "popen" | "getenv" | "setenv"
            | "unsetenv" | "fflush" | "fclose" | "fseek" | "ftell" | "rewind" | "feof" | "ferror" | "fileno" | "close" | "exit" | "_exit" | "abort"
            | "__assert_fail" | "__assert_perror_fail" | "assert" | "longjmp" | "_longjmp" | "siglongjmp" | "strerror" | "strsignal" | "srand" | "rand"
            | "sleep" | "usleep" | "isatty" | "getpid" | "raise" | "signal" | "abs" | "labs" | "llabs" | "toupper" | "tolower"
            | "lseek" | "dup" | "dup2" | "kill" | "alarm" | "atexit" | "clock" | "difftime" | "localtime" | "gmtime" | "ctime"
            | "asctime" | "fork" | "getchar" | "fgetc" | "getc" | "ungetc" | "__stack_chk_fail"
            // Their `%n` writes through the `va_list` of a variadic wrapper, whose calls are
            // clobber sites when given a pointer into an object (`prints_from_a_va_list`).
            | "vprintf" | "vfprintf" | "vdprintf" | "vsyslog" | "vwarn" | "vwarnx" | "verr" | "verrx" | "__vfprintf_chk" | "__vprintf_chk"
    )
}

/// Functions of the C library that, given a pointer into an object, return a pointer to
/// memory of their own (a copy, a stream), never into that object.
pub(super) fn returns_fresh(name: &str) -> bool {
    matches!(name, "strdup" | "strndup" | "wcsdup" | "malloc" | "calloc" | "aligned_alloc" | "fopen" | "freopen" | "fdopen" | "popen" | "opendir" | "strerror" | "strsignal" | "localtime" | "gmtime" | "ctime" | "asctime")
}

pub(super) fn returns_into(name: &str) -> Option<u32> {
    let name = unfortified(name);
    Some(match name {
        "strchr" | "strrchr" | "strchrnul" | "strstr" | "strcasestr" | "strpbrk" | "memchr" | "memrchr" | "rawmemchr" | "index" | "rindex" => 0,
        "strcpy" | "strncpy" | "strcat" | "strncat" | "stpcpy" | "stpncpy" | "memcpy" | "memmove" | "memset" | "mempcpy" | "fgets" | "gets" => 0,
        "wcschr" | "wcsrchr" | "wcsstr" | "wmemchr" | "wcscpy" | "wcsncpy" | "wcscat" | "wmemcpy" | "wmemmove" | "wmemset" | "fgetws" => 0,
        "realpath" => 1,
        _ => return None,
    })
}

/// The NUL-terminated string a pointer constant points to: a constant global's initializer,
/// from its start or a constant offset into it (without the NUL).
pub(super) fn constant_string(td: llvm_sys::target::LLVMTargetDataRef, p: llvm::Value) -> Option<Vec<u8>> {
    let (global, skip) = if llvm::is_a_global_variable(p) {
        (p, 0)
    } else if is_gep(p) && llvm::is_a_constant_expr(p) {
        let (c, terms) = gep_byte_offset(td, p)?;
        (llvm::operand(p, 0), usize::try_from(c).ok().filter(|_| terms.is_empty())?)
    } else {
        return None;
    };
    if !llvm::is_a_global_variable(global) || !llvm::is_global_constant(global) {
        return None;
    }
    let init = llvm::initializer(global)?;
    // SAFETY: reading the bytes of a constant data array (checked first) that outlives the call.
    let bytes = unsafe {
        if LLVMIsAConstantDataSequential(init).is_null() || LLVMIsConstantString(init) == 0 {
            return None;
        }
        let mut len = 0usize;
        let ptr = LLVMGetAsString(init, &mut len);
        std::slice::from_raw_parts(ptr as *const u8, len).to_vec()
    };
    let bytes = bytes.get(skip..)?;
    let end = bytes.iter().position(|&b| b == 0)?;
    Some(bytes[..end].to_vec())
}

/// A conversion's length modifier (`l`, `hh`, ...) and its conversion character, read from
/// `format` at `k` (past its flags, width and precision), `k` moved past them.
pub(super) fn conversion_spec(format: &[u8], k: &mut usize) -> Option<(String, u8)> {
    let modifier: String = format[*k..].iter().take_while(|b| b"hljztLq".contains(b)).map(|&b| b as char).collect();
    *k += modifier.len();
    let conversion = *format.get(*k)?;
    *k += 1;
    Some((modifier, conversion))
}

/// The most bytes a `printf` format prints (its NUL not counted), whatever its arguments:
/// `None` when a conversion is unbounded (`%s` without a precision, floating point, a `*`
/// width) or the format is not understood. Generous: signs, prefixes and precisions are
/// counted at their widest.
pub(super) fn print_max_len(format: &[u8]) -> Option<u64> {
    let mut total: u64 = 0;
    let mut k = 0;
    while k < format.len() {
        if format[k] != b'%' {
            total += 1;
            k += 1;
            continue;
        }
        k += 1;
        if format.get(k) == Some(&b'%') {
            total += 1;
            k += 1;
            continue;
        }
        k += format[k..].iter().take_while(|b| b"-+ #0'".contains(b)).count();
        let number = |k: &mut usize| -> Option<u64> {
            if format.get(*k) == Some(&b'*') {
                return None;
            }
            let digits = format[*k..].iter().take_while(|b| b.is_ascii_digit()).count();
            let n = if digits == 0 { 0 } else { std::str::from_utf8(&format[*k..*k + digits]).ok()?.parse().ok()? };
            *k += digits;
            Some(n)
        };
        let width = number(&mut k)?;
        let precision = if format.get(k) == Some(&b'.') {
            k += 1;
            Some(number(&mut k)?)
        } else {
            None
        };
        let (modifier, conversion) = conversion_spec(format, &mut k)?;
        // The longest value of each integer conversion at each size: "-2147483648" is 11.
        let integer = |long: u64, int: u64, short: u64, char: u64| -> Option<u64> {
            let digits = match modifier.as_str() {
                "hh" => char,
                "h" => short,
                "" => int,
                "l" | "ll" | "j" | "z" | "t" | "q" => long,
                _ => return None,
            };
            // A precision pads the digits; a sign, a space or a `0x` prefix comes on top.
            Some(digits.max(precision.unwrap_or(0) + 1) + 2)
        };
        let len = match conversion {
            b'd' | b'i' => integer(20, 11, 6, 4)?,
            b'u' => integer(20, 10, 5, 3)?,
            b'x' | b'X' => integer(16, 8, 4, 2)?,
            b'o' => integer(22, 11, 6, 3)?,
            // A wide character (`%lc`, `%Lc`) prints as up to 6 bytes (glibc's UTF-8 encodes
            // values up to 0x7fffffff); a wide string's length is not its precision in bytes.
            b'c' if modifier.is_empty() => 1,
            b'c' => 6,
            b's' if modifier.is_empty() => precision?,
            b'p' => 18,
            b'n' => 0,
            _ => return None,
        };
        total = total.checked_add(len.max(width))?;
    }
    Some(total)
}

/// Moves `k` past the next `%` of `format` that starts a conversion (literal text and `%%`
/// skipped); false when there is none.
fn next_conversion(format: &[u8], k: &mut usize) -> bool {
    while *k < format.len() {
        if format[*k] != b'%' {
            *k += 1;
            continue;
        }
        *k += 1;
        if format.get(*k) == Some(&b'%') {
            *k += 1;
            continue;
        }
        return true;
    }
    false
}

/// What each argument after a `printf` format gets written: `Some(n)` for a `%n` conversion (its
/// size), `None` for an argument read (a `*` width or precision takes one too). `None` overall
/// when the format is not understood.
pub(super) fn count_sizes(format: &[u8]) -> Option<Vec<Option<u64>>> {
    let mut out = vec![];
    let mut k = 0;
    while next_conversion(format, &mut k) {
        // Flags, width and precision; each `*` takes an argument.
        while k < format.len() && (b"-+ #0'.".contains(&format[k]) || format[k].is_ascii_digit() || format[k] == b'*') {
            if format[k] == b'*' {
                out.push(None);
            }
            k += 1;
        }
        let (modifier, conversion) = conversion_spec(format, &mut k)?;
        if !b"diouxXcspnfFeEgGaA".contains(&conversion) {
            return None;
        }
        out.push((conversion == b'n').then(|| match modifier.as_str() {
            "hh" => 1,
            "h" => 2,
            "" => 4,
            _ => 8,
        }));
    }
    Some(out)
}

/// What each argument after a `scanf` format gets, in order: `Some(n)`, at most `n` bytes
/// (`%d` 4, `%lf` 8, `%5s` 6); `None`, a string of any length (`%s`, `%[` without a width).
/// `None` overall when the format is not understood.
pub(super) fn scan_sizes(format: &[u8]) -> Option<Vec<Option<u64>>> {
    let mut out = vec![];
    let mut k = 0;
    while next_conversion(format, &mut k) {
        let suppressed = format.get(k) == Some(&b'*');
        if suppressed {
            k += 1;
        }
        let digits = format[k..].iter().take_while(|b| b.is_ascii_digit()).count();
        // A width of 0 (`%0s`) is no width to glibc: the string is as long as the input's.
        let width: Option<u64> = if digits > 0 { std::str::from_utf8(&format[k..k + digits]).ok()?.parse().ok().filter(|&w| w > 0) } else { None };
        k += digits;
        let (modifier, conversion) = conversion_spec(format, &mut k)?;
        if conversion == b'[' {
            // The set runs to the next `]` (a `]` right after `[` or `[^` belongs to it).
            if format.get(k) == Some(&b'^') {
                k += 1;
            }
            if format.get(k) == Some(&b']') {
                k += 1;
            }
            k += format[k..].iter().position(|&b| b == b']')? + 1;
        }
        if suppressed {
            continue;
        }
        let size = match conversion {
            b'd' | b'i' | b'u' | b'o' | b'x' | b'X' | b'n' => Some(match modifier.as_str() {
                "hh" => 1,
                "h" => 2,
                "" => 4,
                "l" | "ll" | "j" | "z" | "t" | "q" | "L" => 8,
                _ => return None,
            }),
            // Before C99 (`-std=gnu89`, plain `scanf`), glibc reads `%as`, `%aS` and `%a[` as
            // "allocate": an 8-byte pointer.
            b'a' if modifier.is_empty() => Some(8),
            b'f' | b'e' | b'g' | b'E' | b'a' | b'G' | b'F' | b'A' => Some(match modifier.as_str() {
                "" => 4,
                "l" => 8,
                "L" => 16,
                _ => return None,
            }),
            b'p' => Some(8),
            // `%lc`, `%ls`, `%l[`: wide characters, 4 bytes each (glibc reads `L`, `ll`, `q`,
            // `j`, `z` and `t` there as `l`).
            b'c' => Some(width.unwrap_or(1) * if modifier.is_empty() { 1 } else { 4 }),
            b's' | b'[' => width.map(|w| (w + 1) * if modifier.is_empty() { 1 } else { 4 }),
            _ => return None,
        };
        out.push(size);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::{count_sizes, print_max_len, scan_sizes};

    #[test]
    fn printf_formats_write_through_their_percent_n_arguments() {
        assert_eq!(count_sizes(b"%d%n %s %hhn"), Some(vec![None, Some(4), None, Some(1)]));
        // `*` widths take an argument of their own.
        assert_eq!(count_sizes(b"%*d%lln"), Some(vec![None, None, Some(8)]));
        assert_eq!(count_sizes(b"%k"), None);
    }

    #[test]
    fn printf_formats_print_at_most() {
        // "%d" at most "-2147483648" (11, counted generously as 13), "x=" two more.
        assert_eq!(print_max_len(b"x=%d"), Some(15));
        assert_eq!(print_max_len(b"%hhx|%8c|%.3s|%%"), Some(4 + 1 + 8 + 1 + 3 + 1 + 1));
        // Unbounded: a string without a precision, a `*` width, floating point.
        assert_eq!(print_max_len(b"%s"), None);
        assert_eq!(print_max_len(b"%*d"), None);
        assert_eq!(print_max_len(b"%f"), None);
    }

    #[test]
    fn scanf_formats_say_how_much_each_argument_gets() {
        assert_eq!(scan_sizes(b"%d %ld %hhu %lf %f %Lf %p"), Some(vec![Some(4), Some(8), Some(1), Some(8), Some(4), Some(16), Some(8)]));
        // Strings: their width plus the NUL, or unbounded; `%c` its width; suppressed and
        // literal percents take no argument.
        assert_eq!(scan_sizes(b"%7s %s %3c %c %*d %% %[a-z] %5[^]x]"), Some(vec![Some(8), None, Some(3), Some(1), None, Some(6)]));
        // Not understood: no sizes at all (every argument is then unbounded).
        assert_eq!(scan_sizes(b"%lk"), None);
        // Wide characters: 4 bytes each.
        assert_eq!(scan_sizes(b"%4ls %2lc"), Some(vec![Some(20), Some(8)]));
        assert_eq!(scan_sizes(b"%"), None);
        // glibc reads `%0s` as `%s`.
        assert_eq!(scan_sizes(b"%0s %00[a-z] %02s"), Some(vec![None, None, Some(3)]));
    }
}
