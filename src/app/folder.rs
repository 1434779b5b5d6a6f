//! The life of the invocation's own folder, for every subcommand that makes one: marked
//! incomplete (`invocation.json`) from its first moment ([`open_folder`], as `resolve` makes
//! the folder), and sealed once the subcommand has returned ([`seal_folder`], called by
//! `dispatch`): complete, and only then named by `OUT/latest`, or left incomplete with the
//! error that ended it. A killed harness leaves the folder marked incomplete and `latest` where
//! it was.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{AppError, AppResult};
use crate::classify::result::{INVOCATION_SCHEMA, InvocationMark};
use crate::store;

/// The folder this invocation made under `--out`, until it is sealed.
static OPEN_FOLDER: Mutex<Option<OpenFolder>> = Mutex::new(None);

struct OpenFolder {
    out: PathBuf,
    id: String,
}

/// Marks a just-made invocation folder `OUT/ID` incomplete and remembers it for
/// [`seal_folder`]. The mark comes first: whatever happens next, the folder says it is not
/// whole until the end says otherwise.
pub fn open_folder(out: &Path, id: &str) -> Result<(), store::StoreError> {
    store::mark_invocation(
        &out.join(id),
        &InvocationMark {
            schema: INVOCATION_SCHEMA,
            complete: false,
            exit_code: None,
            error: None,
        },
    )?;
    *OPEN_FOLDER.lock().expect("folder lock") = Some(OpenFolder {
        out: out.to_path_buf(),
        id: id.to_string(),
    });
    Ok(())
}

/// Seals the invocation's folder, if it made one, once the subcommand returned: a result
/// means everything it writes is written (the folder is marked complete, then `OUT/latest`
/// moves to it, last); an error is written into the mark, which stays incomplete, and
/// `latest` stays where it was. A mark that cannot be written turns the result into a setup
/// failure.
pub fn seal_folder(result: AppResult) -> AppResult {
    let Some(folder) = OPEN_FOLDER.lock().expect("folder lock").take() else {
        return result;
    };
    let dir = folder.out.join(&folder.id);
    let mark = InvocationMark {
        schema: INVOCATION_SCHEMA,
        complete: result.is_ok(),
        exit_code: Some(match &result {
            Ok(code) => code.code(),
            Err(e) => e.code.code(),
        }),
        error: result.as_ref().err().map(|e| e.message.clone()),
    };
    if let Err(e) = store::mark_invocation(&dir, &mark) {
        return match result {
            Ok(_) => Err(AppError::setup(format!(
                "{e}: the folder stays marked incomplete"
            ))),
            // The error that ended the invocation says more than the one marking it.
            Err(first) => Err(first),
        };
    }
    if result.is_ok()
        && let Err(e) = store::point_link(&folder.out.join("latest"), Path::new(&folder.id))
    {
        eprintln!("wakeprobe: warning: {e}");
    }
    result
}
