//! The `strain` binary: everything happens in [`strain::cli::run`]; this prints its error.

fn main() {
    let code = match strain::cli::run(std::env::args_os()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("strain: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}
