//! The chat template a GGUF file carries (`tokenizer.chat_template`, Jinja), rendered with
//! minijinja for a system and a user message and the generation prompt. A base model
//! without a template gets no chat markers: the caller writes a plain completion prompt.

use minijinja::{Environment, context};
use serde::Serialize;

use crate::LmError;

/// One message of a conversation.
#[derive(Debug, Clone, Serialize)]
pub struct Message<'a> {
    pub role: &'a str,
    pub content: &'a str,
}

/// A compiled chat template.
#[derive(Debug)]
pub struct ChatTemplate {
    env: Environment<'static>,
    bos: String,
    eos: String,
}

const NAME: &str = "chat";

impl ChatTemplate {
    pub fn new(source: &str, bos: &str, eos: &str) -> Result<Self, LmError> {
        // As the Hugging Face tokenizers that templates are written for render them.
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.add_function("raise_exception", |msg: String| -> Result<String, _> {
            Err(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                msg,
            ))
        });
        env.add_template_owned(NAME, source.to_owned())
            .map_err(|e| {
                LmError::Template(format!("tokenizer.chat_template does not parse: {e}"))
            })?;
        Ok(Self {
            env,
            bos: bos.into(),
            eos: eos.into(),
        })
    }

    /// The prompt for `messages`, ending where the assistant's answer starts.
    pub fn render(&self, messages: &[Message<'_>]) -> Result<String, LmError> {
        let tmpl = self
            .env
            .get_template(NAME)
            .map_err(|e| LmError::Template(e.to_string()))?;
        tmpl.render(context! {
            messages => messages,
            add_generation_prompt => true,
            bos_token => &self.bos,
            eos_token => &self.eos,
            tools => minijinja::Value::UNDEFINED,
        })
        .map_err(|e| LmError::Template(format!("rendering tokenizer.chat_template: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_chatml_style_template_with_the_generation_prompt() {
        let t = ChatTemplate::new(
            "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}\
             {%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{%- endif %}",
            "",
            "<|im_end|>",
        )
        .unwrap();
        let s = t
            .render(&[
                Message {
                    role: "system",
                    content: "S",
                },
                Message {
                    role: "user",
                    content: "U",
                },
            ])
            .unwrap();
        assert_eq!(
            s,
            "<|im_start|>system\nS<|im_end|><|im_start|>user\nU<|im_end|><|im_start|>assistant\n"
        );
    }

    #[test]
    fn a_template_that_does_not_parse_is_named() {
        let e = ChatTemplate::new("{% if %}", "", "").unwrap_err();
        assert!(e.to_string().contains("tokenizer.chat_template"), "{e}");
    }
}
