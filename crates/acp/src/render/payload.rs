//! The parts of the core event payloads the renderer reads.

use serde::Deserialize;

#[derive(Deserialize)]
pub(super) struct Position {
    pub turn: u32,
    pub step: u32,
}

#[derive(Deserialize)]
pub(super) struct UserPayload {
    pub turn: u32,
    pub step: u32,
    pub message: UserBody,
}

#[derive(Deserialize)]
pub(super) struct UserBody {
    pub text: String,
    pub source: Source,
}

#[derive(Deserialize)]
pub(super) struct Source {
    pub kind: String,
}

#[derive(Deserialize)]
pub(super) struct ChunkPayload {
    pub turn: u32,
    pub step: u32,
    pub chunk: Chunk,
}

#[derive(Deserialize)]
pub(super) struct Chunk {
    pub text_delta: Option<String>,
    pub reasoning_delta: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct MessagePayload {
    pub turn: u32,
    pub step: u32,
    pub message: MessageBody,
}

#[derive(Deserialize)]
pub(super) struct MessageBody {
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub reasoning: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct TurnPayload {
    pub turn: u32,
}
