use halo_macros::halo;

#[halo(example(input = [1, 2], output = { "id": 1 }))]
#[utoipa::path(post, path = "/orders")]
async fn create_order() {}

fn main() {
    let _ = create_order();
}
