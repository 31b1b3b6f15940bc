mod faux;
mod models;
mod overflow;
mod retry;
mod thinking;
mod transform;
