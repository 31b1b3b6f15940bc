mod branches;
mod files;
mod found;
mod index_file;
mod stored;
mod support;
