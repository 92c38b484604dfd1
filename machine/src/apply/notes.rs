//! Test commands (`Put`, `Note`): a key-value table and per-topic notes that the
//! exactly-once and fault tests count. Not on the record.

use crate::apply::error::{ApplyError, non_empty};
use crate::model::ApplyCtx;
use crate::model::{NoteRecord, State};
use crate::reply::{NoteReply, PutReply, Reply};

pub(super) fn put(state: &mut State, key: &str, value: &str) -> Result<Reply, ApplyError> {
    non_empty("key", key)?;
    let previous = state.kv.get(key).cloned();
    state.kv.insert(key.to_owned(), value.to_owned());
    Ok(Reply::from(PutReply { previous }))
}

pub(super) fn note(
    state: &mut State,
    ctx: &ApplyCtx,
    client_id: &str,
    request_id: u64,
    topic: &str,
    text: &str,
) -> Result<Reply, ApplyError> {
    non_empty("topic", topic)?;
    let record = NoteRecord {
        text: text.to_owned(),
        client_id: client_id.into(),
        request_id,
        log_index: ctx.log_index,
        time_ms: ctx.time_ms,
    };
    let count = match state.notes.get_mut(topic) {
        Some(list) => {
            list.push(record);
            list.len()
        }
        None => {
            state.notes.insert(topic.to_owned(), vec![record]);
            1
        }
    };
    Ok(Reply::from(NoteReply { count }))
}
