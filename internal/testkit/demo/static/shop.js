// The demo shop's page: a cart kept in memory, and "Book", which waits its
// turn with waitroom's agent and books with the pass it gets. The cart is
// the page's own state: waiting in the dialog does not touch it.

const agentURL = document.querySelector('meta[name="waitroom-agent"]').content;
const queue = document.querySelector('meta[name="waitroom-queue"]').content;
const lang = document.documentElement.lang;
const $ = (id) => document.getElementById(id);

const cart = [];
let pass = '';

function drawCart() {
  $('cart').replaceChildren(...cart.map((t) => {
    const li = document.createElement('li');
    li.textContent = t;
    return li;
  }));
}

document.querySelectorAll('button.add').forEach((b) => {
  b.addEventListener('click', () => {
    cart.push(b.dataset.train);
    drawCart();
  });
});

// book asks the shop's API with the pass; the API decides.
async function book(withPass) {
  const res = await fetch('/api/book', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + withPass },
    body: JSON.stringify({ items: cart }),
  });
  const data = await res.json().catch(() => ({}));
  return { status: res.status, data: data };
}

$('book').addEventListener('click', async () => {
  if (!cart.length) {
    $('result').textContent = 'Your cart is empty.';
    return;
  }
  $('result').textContent = '';
  try {
    const { wait } = await import(agentURL);
    const got = await wait({ queue: queue, lang: lang });
    pass = got.pass;
  } catch (err) {
    $('result').textContent = err.code === 'left' ? 'You left the line. Your cart is kept.' : 'Could not wait: ' + (err.code || err.message);
    return;
  }
  const r = await book(pass);
  if (r.status === 200) {
    $('result').textContent = 'Booked: ' + r.data.booked.join(', ');
    $('done').hidden = false;
  } else {
    $('result').textContent = 'The booking was refused (' + r.status + ').';
  }
});

$('done').addEventListener('click', async () => {
  await fetch('/api/done', { method: 'POST', headers: { Authorization: 'Bearer ' + pass } });
  pass = '';
  $('done').hidden = true;
  $('result').textContent = 'Thank you: your turn is given back.';
});

drawCart();
