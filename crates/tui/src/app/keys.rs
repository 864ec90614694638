//! What each key does, by what is open: a question, a picker, a menu, or the composer. The
//! key map is the RFC's ("The interactive terminal").

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{App, Effect, Popup};
use crate::composer::{Edit, Enter};
use crate::gate::Answer;

/// A second Ctrl-C within this quits.
const DOUBLE_PRESS: Duration = Duration::from_secs(1);

impl App {
    pub(super) fn key(&mut self, key: KeyEvent, now: Instant, effects: &mut Vec<Effect>) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('c') if ctrl => return self.interrupt(now, effects),
            KeyCode::Char('d') if ctrl => {
                if self.composer.is_empty() && self.asking.is_none() {
                    self.quit = true;
                    effects.push(Effect::Quit);
                }
                return;
            }
            KeyCode::Esc => return self.escape(effects),
            _ => {}
        }
        self.hint = None;
        if self.asking.is_some() {
            return self.answer_key(key, effects);
        }
        if let Some(Popup::Picker(..)) = self.popup {
            return self.picker_key(key, effects);
        }
        if self.popup_key(key, now, effects) {
            return;
        }
        self.composer_key(key, now, effects);
    }

    /// Ctrl-C: cancels a turn (a second within a second quits); with no turn, clears the
    /// composer, and on an empty one asks for a second press to quit.
    fn interrupt(&mut self, now: Instant, effects: &mut Vec<Effect>) {
        let again = self
            .last_interrupt
            .is_some_and(|at| now.duration_since(at) <= DOUBLE_PRESS);
        self.last_interrupt = Some(now);
        if again && (self.turn.is_some() || self.composer.is_empty()) {
            self.quit = true;
            effects.push(Effect::Quit);
            return;
        }
        if self.turn.is_some() {
            self.cancel(effects);
            self.hint = Some("cancelling · Ctrl-C again to quit".into());
            return;
        }
        if self.popup.is_some() || !self.composer.is_empty() {
            self.popup = None;
            self.composer.apply(Edit::Clear);
            self.last_interrupt = None;
            return;
        }
        self.hint = Some(super::QUIT_HINT.into());
    }

    /// Esc: closes a list; otherwise cancels the turn.
    fn escape(&mut self, effects: &mut Vec<Effect>) {
        self.hint = None;
        if self.asking.is_none() && self.popup.take().is_some() {
            return;
        }
        if self.turn.is_some() {
            self.cancel(effects);
        }
    }

    fn cancel(&mut self, effects: &mut Vec<Effect>) {
        // The gate gives up on its own: the turn's token fires.
        self.asking = None;
        self.popup = None;
        if let Some(turn) = &mut self.turn {
            turn.doing = "cancelling".into();
        }
        effects.push(Effect::Cancel);
    }

    fn answer_key(&mut self, key: KeyEvent, effects: &mut Vec<Effect>) {
        let Some(asking) = &mut self.asking else {
            return;
        };
        if let Some(reason) = &mut asking.reason {
            match key.code {
                KeyCode::Enter => {
                    let reason = reason.clone();
                    self.answer(Answer::No(reason), effects);
                }
                KeyCode::Backspace => {
                    reason.pop();
                }
                KeyCode::Char(c) if !c.is_control() => reason.push(c),
                _ => {}
            }
            return;
        }
        match key.code {
            KeyCode::Char('y' | 'Y') => self.answer(Answer::Once, effects),
            KeyCode::Char('a' | 'A') if asking.question.grant.is_some() => {
                self.answer(Answer::Always, effects)
            }
            KeyCode::Char('n' | 'N') => asking.reason = Some(String::new()),
            _ => {}
        }
    }

    fn answer(&mut self, answer: Answer, effects: &mut Vec<Effect>) {
        let Some(asking) = self.asking.take() else {
            return;
        };
        let said = match &answer {
            Answer::Once => "  ✓ allowed once".to_owned(),
            Answer::Always => format!(
                "  ✓ allowed from now on in this project: {}",
                asking
                    .question
                    .grant
                    .as_ref()
                    .map_or(String::new(), |grant| {
                        dsh_tools::safe_text::SafeText::plain(&grant.describe())
                    })
            ),
            Answer::No(reason) if reason.trim().is_empty() => "  ✗ declined".to_owned(),
            Answer::No(reason) => format!(
                "  ✗ declined: {}",
                dsh_tools::safe_text::SafeText::plain(reason)
            ),
        };
        self.say(&said);
        effects.push(Effect::Answer(asking.question, answer));
    }

    fn picker_key(&mut self, key: KeyEvent, effects: &mut Vec<Effect>) {
        let Some(Popup::Picker(pick, menu)) = &mut self.popup else {
            return;
        };
        let pick = *pick;
        match key.code {
            KeyCode::Up => menu.up(),
            KeyCode::Down | KeyCode::Tab => menu.down(),
            KeyCode::Backspace => {
                let mut filter = menu.filter_text().to_owned();
                filter.pop();
                menu.filter(&filter);
            }
            KeyCode::Char(c) if !c.is_control() => {
                let filter = format!("{}{c}", menu.filter_text());
                menu.filter(&filter);
            }
            KeyCode::Enter => {
                let chosen = menu.selected().map(|e| e.value.clone());
                self.popup = None;
                if let Some(chosen) = chosen {
                    self.picked(pick, &chosen, effects);
                }
            }
            _ => {}
        }
    }

    /// A key for the slash menu or the path list; `false` when it is the composer's.
    fn popup_key(&mut self, key: KeyEvent, now: Instant, effects: &mut Vec<Effect>) -> bool {
        let accept = matches!(key.code, KeyCode::Tab)
            || (key.code == KeyCode::Enter && key.modifiers.is_empty());
        match (&mut self.popup, key.code) {
            (Some(Popup::Commands(menu) | Popup::Paths(menu)), KeyCode::Up) => menu.up(),
            (Some(Popup::Commands(menu) | Popup::Paths(menu)), KeyCode::Down) => menu.down(),
            (Some(Popup::Commands(menu)), _) if accept => {
                let Some(name) = menu.selected().map(|e| e.value.clone()) else {
                    return false;
                };
                self.popup = None;
                self.composer.apply(Edit::Clear);
                match key.code {
                    // Tab completes the name, for arguments to follow.
                    KeyCode::Tab => {
                        for c in format!("/{name} ").chars() {
                            self.composer.apply(Edit::Insert(c));
                        }
                    }
                    _ => {
                        let typed = format!("/{name}");
                        effects.push(Effect::Remember(typed.clone()));
                        self.composer.history_record(&typed);
                        self.slash(&typed, now, effects);
                    }
                }
            }
            (Some(Popup::Paths(menu)), _) if accept => {
                let Some(path) = menu.selected().map(|e| e.value.clone()) else {
                    return false;
                };
                self.popup = None;
                let (row, col) = self.composer.cursor();
                let Some((_, word)) = crate::attach::at_word(&self.composer.lines()[row], col)
                else {
                    return true;
                };
                for _ in 0..word.chars().count() {
                    self.composer.apply(Edit::Backspace);
                }
                for c in format!("{path} ").chars() {
                    self.composer.apply(Edit::Insert(c));
                }
            }
            _ => return false,
        }
        true
    }

    fn composer_key(&mut self, key: KeyEvent, now: Instant, effects: &mut Vec<Effect>) {
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let edit = match key.code {
            KeyCode::Enter if alt || shift => Edit::NewLine,
            // Ctrl-J is a line feed: what many terminals send for Shift+Enter.
            KeyCode::Char('j') if ctrl => Edit::NewLine,
            KeyCode::Enter => {
                match self.composer.enter() {
                    Enter::Send(text) => {
                        effects.push(Effect::Remember(text.clone()));
                        self.popup = None;
                        match text.trim_start().starts_with('/') {
                            true => self.slash(&text, now, effects),
                            false => self.send(&text, &text, now, effects),
                        }
                    }
                    Enter::NewLine | Enter::Nothing => {}
                }
                return self.follow_cursor(effects);
            }
            KeyCode::Char('a') if ctrl => Edit::Home,
            KeyCode::Char('e') if ctrl => Edit::End,
            KeyCode::Char('u') if ctrl => Edit::Clear,
            KeyCode::Char(c) if !ctrl => Edit::Insert(c),
            KeyCode::Backspace => Edit::Backspace,
            KeyCode::Delete => Edit::Delete,
            KeyCode::Left => Edit::Left,
            KeyCode::Right => Edit::Right,
            KeyCode::Home => Edit::Home,
            KeyCode::End => Edit::End,
            KeyCode::Up => Edit::Up,
            KeyCode::Down => Edit::Down,
            _ => return,
        };
        self.composer.apply(edit);
        self.follow_cursor(effects);
    }
}
