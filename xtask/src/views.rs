//! The line views the format gates share: `lines` split on `\n`, and which of them are prose
//! (neither inside nor delimiting a fenced code block). RFC content checks scan prose only, so
//! a document may quote the format inside a fence.

/// The line views: `lines` split on `\n`, and which of them are prose (not inside or
/// delimiting a fenced code block).
pub struct Views<'a> {
    pub lines: Vec<&'a str>,
    pub prose: Vec<bool>,
}

impl<'a> Views<'a> {
    pub fn new(text: &'a str) -> Views<'a> {
        let lines: Vec<&str> = text.split('\n').collect();
        let mut prose = vec![true; lines.len()];
        let mut fence: Option<(char, usize)> = None;
        for (i, line) in lines.iter().enumerate() {
            let indent = line.len() - line.trim_start_matches(' ').len();
            let body = &line[indent..];
            match fence {
                None if indent <= 3 => {
                    if let Some((ch, n)) = fence_open(body) {
                        fence = Some((ch, n));
                        prose[i] = false;
                    }
                }
                None => {}
                Some((ch, n)) => {
                    prose[i] = false;
                    let run = body.chars().take_while(|c| *c == ch).count();
                    if indent <= 3 && run >= n && body[run * ch.len_utf8()..].trim().is_empty() {
                        fence = None;
                    }
                }
            }
        }
        Views { lines, prose }
    }

    /// `(1-based line, text)` of every prose line.
    pub fn prose_lines(&self) -> impl Iterator<Item = (u32, &'a str)> + '_ {
        self.lines
            .iter()
            .enumerate()
            .filter(|(i, _)| self.prose[*i])
            .map(|(i, l)| (u32::try_from(i + 1).unwrap_or(u32::MAX), *l))
    }
}

/// A fence opening: three or more backticks (info string without backticks) or tildes.
fn fence_open(body: &str) -> Option<(char, usize)> {
    let ch = body.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = body.chars().take_while(|c| *c == ch).count();
    if n < 3 {
        return None;
    }
    let info = &body[n..];
    (ch == '~' || !info.contains('`')).then_some((ch, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_filter() {
        let v = Views::new("a\n```rust\nStatus: x\n```\nb\n~~~~\n```\n~~~~\nc\n```\nopen");
        let prose: Vec<_> = v.prose_lines().map(|(_, l)| l).collect();
        assert_eq!(prose, ["a", "b", "c"]);
    }
}
